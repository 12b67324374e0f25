// Any process of the user can write rows into the store: a `runs` row naming one of the user's own
// processes (here a live `sleep`) with its real start time reads as a live gateway, and a pending
// request of that run, dated before the human's and saying a call waits on it, was the one
// `approve --next` took. `--next` now takes only a request whose gateway is, by its command line,
// portcullis's `run` with the recorded start time (src/identity/procPortcullis.ts), says in a line
// of its own which requests it passed by and why, and says how many newer requests are pending
// beside the one it took (docs/security.md, "`approve --next` takes only a portcullis gateway's
// request"). Deny first stands: the passed-by request can still be denied (or approved) by its ID.
// A real gateway in front of the catalog fixture with two real requests, a real `sleep`, the CLI.
import { afterEach, describe, expect, it } from "vitest";
import { pending } from "../helpers/approvals.js";
import { alive } from "../helpers/files.js";
import { decoyProcess, deployGateway, forgeInOtherRun } from "../helpers/forgedRequests.js";
import { runCli } from "../helpers/gateway.js";
import { passphraseEnv } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const cli = (stateDir: string, args: string[]) =>
  runCli([...args, "--state-dir", stateDir], { env: passphraseEnv(), noTerminal: true });

const FORGED_RUN = "forged-run-01";
const FORGED_REQUEST = "01M95GYS1Q2PM811SG8AHB299F";

describe("approve --next with a forged request whose gateway is a live process that is no portcullis", () => {
  it("passes it by with a line saying so, takes the human's oldest and counts the newer; it is still decided by its ID", async () => {
    const { stateDir, ask } = await deployGateway(cleanup);
    // two calls with other arguments: two requests (the same call again would wait on the first)
    const first = await ask("one");
    const second = await ask("two");
    const sleep = decoyProcess(cleanup);
    // a forged run naming the sleep as its gateway, and a request of it dated before the human's
    forgeInOtherRun(stateDir, first.request, FORGED_REQUEST, FORGED_RUN, sleep);
    // the listing shows it (nothing in the row tells it from a gateway's), oldest
    expect((await pending(stateDir)).map((p) => p.request).sort()).toEqual(
      [FORGED_REQUEST, first.request, second.request].sort(),
    );
    const approvals = `'portcullis approvals --state-dir ${stateDir}'`;

    const next = await cli(stateDir, ["approve", "--next", "--for", "call"]);
    expect(next.code, next.stderr).toBe(0);
    const lines = next.stdout.split("\n");
    expect(lines[0]).toBe(
      `approve --next: ${first.request} (deploy on shell), the oldest pending request, and a call waits on it now; 1 newer request is pending beside it (${approvals} lists it).`,
    );
    expect(lines[1]).toBe(
      `approve --next: passed by 1 pending request (${FORGED_REQUEST}) whose gateway is not, by its command line as read here, a portcullis gateway: the rows may have been written by another process (or the gateway runs in another PID namespace, where its command line cannot be read); read one with ${approvals} and decide it by its ID if it is yours.`,
    );
    expect(next.stdout).toContain(`approved ${first.request}`);

    // the last of the human's: no newer one is counted
    const last = await cli(stateDir, ["approve", "--next", "--for", "call"]);
    expect(last.code, last.stderr).toBe(0);
    expect(last.stdout.split("\n")[0]).toBe(
      `approve --next: ${second.request} (deploy on shell), the oldest pending request, and a call waits on it now.`,
    );
    expect(last.stdout).toContain(`approved ${second.request}`);

    // only the forged one left: --next decides nothing, and says why
    const none = await cli(stateDir, ["deny", "--next"]);
    expect(none.code).toBe(2);
    expect(none.stdout).toBe("");
    expect(none.stderr).toBe(
      `portcullis deny --next: no approval request can be decided with --next: the gateway of the one pending request is not, by its command line as read here, a portcullis gateway (the rows may have been written by another process, or the gateway runs in another PID namespace, where its command line cannot be read); read it with ${approvals} and decide one by its ID if it is yours.\n`,
    );
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([FORGED_REQUEST]);

    // deny first: it is denied by its ID, read or not
    const denied = await cli(stateDir, ["deny", FORGED_REQUEST]);
    expect(denied.code, denied.stderr).toBe(0);
    expect(denied.stdout).toContain(`denied ${FORGED_REQUEST}`);
    expect(await pending(stateDir)).toEqual([]);
    expect(alive(sleep.pid)).toBe(true);
  });
});
