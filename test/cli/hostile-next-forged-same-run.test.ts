// Any process of the user can write rows into the store. A pending request that copies a running
// gateway's run id (so its run row names a real portcullis gateway: pid, start time and command
// line all pass) read as that gateway's: dated first and saying a call waits on it, it was the one
// `approve --next` took, and the lists showed it as any other. A gateway now holds, for each
// request it makes, a listening abstract unix socket named by the request and its review, which no
// other process can put in its file descriptors (src/approval/vouch.ts); `--next` passes by a row
// whose gateway holds none, saying so, the lists mark it, and `approve ID` warns before the
// passphrase (deny first: it is still decided by its ID). Linux only (elsewhere no gateway can
// vouch, and the command line decides alone). A real gateway in front of the catalog fixture, a
// real request, a forged row written with SQLite, the CLI.
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { heldAbstractSockets } from "../../src/identity/proc.js";
import { pending } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { deployGateway, forgeInSameRun } from "../helpers/forgedRequests.js";
import { runCli } from "../helpers/gateway.js";
import { passphraseEnv } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const cli = (stateDir: string, args: string[]) =>
  runCli([...args, "--state-dir", stateDir], { env: passphraseEnv(), noTerminal: true });

const FORGED_REQUEST = "01M95GYS1Q2PM811SG8AHB299F";

/** The pid of the gateway of `request`'s run, as its run row names it. */
function gatewayPid(stateDir: string, request: string): number {
  const db = new Database(join(stateDir, "portcullis.db"), { readonly: true });
  try {
    return db
      .prepare(
        "SELECT gateway_pid FROM runs WHERE run = (SELECT agent_run FROM approval_requests WHERE request = ?)",
      )
      .pluck()
      .get(request) as number;
  } finally {
    db.close();
  }
}

describe.skipIf(process.platform !== "linux")("a forged request in a running gateway's run", () => {
  it("approve --next passes it by, saying its gateway does not vouch for it; the lists mark it; approve ID warns", async () => {
    const { stateDir, ask } = await deployGateway(cleanup);
    const real = await ask("one");
    // the gateway holds the mark of its request, and none of the forged one's
    const held = [...(heldAbstractSockets(gatewayPid(stateDir, real.request)) ?? [])];
    expect(held.filter((n) => n.startsWith(`portcullis-request/v1/${real.request}/`))).toHaveLength(1);
    // a copy of it under another id in the same run, dated before it
    forgeInSameRun(stateDir, real.request, FORGED_REQUEST);
    const approvals = `'portcullis approvals --state-dir ${stateDir}'`;

    // the lists show both, the forged one marked
    const listed = await cli(stateDir, ["approvals", "--json"]);
    expect(listed.code, listed.stderr).toBe(0);
    const rows = (JSON.parse(listed.stdout) as { requests: { request: string; gatewayVouches: unknown }[] })
      .requests;
    expect(Object.fromEntries(rows.map((r) => [r.request, r.gatewayVouches]))).toEqual({
      [FORGED_REQUEST]: false,
      [real.request]: true,
    });
    const text = await cli(stateDir, ["approvals"]);
    expect(text.code, text.stderr).toBe(0);
    const cards = text.stdout.split("\n\n");
    const forgedCard = cards.find((c) => c.includes(FORGED_REQUEST) && !c.includes(real.request));
    const realCard = cards.find((c) => c.includes(real.request) && !c.includes(FORGED_REQUEST));
    expect(forgedCard).toContain("not vouched: its gateway holds no mark of this request with this review");
    expect(realCard).not.toContain("not vouched");

    // --next takes the gateway's own request, and says which it passed by and why
    const next = await cli(stateDir, ["approve", "--next", "--for", "call"]);
    expect(next.code, next.stderr).toBe(0);
    const lines = next.stdout.split("\n");
    expect(lines[0]).toBe(
      `approve --next: ${real.request} (deploy on shell), the oldest pending request, and a call waits on it now.`,
    );
    expect(lines[1]).toBe(
      `approve --next: passed by 1 pending request (${FORGED_REQUEST}) that its gateway does not vouch for: the gateway holds no mark of such a request with its review, so the row was written by another process (or rewritten since); read one with ${approvals} and decide it by its ID only if a gateway printed that ID for you.`,
    );
    expect(next.stdout).toContain(`approved ${real.request}`);
    // the gateway lets go of the mark of a request no longer pending (checked every 5 s): no
    // descriptor is kept per request for the gateway's whole life
    const marks = () => [...(heldAbstractSockets(gatewayPid(stateDir, real.request)) ?? [])];
    await waitFor(
      () => !marks().some((n) => n.includes(real.request)),
      15_000,
      "the mark of the approved request let go",
    );

    // only the forged one left: --next decides nothing, and says why
    const none = await cli(stateDir, ["deny", "--next"]);
    expect(none.code).toBe(2);
    expect(none.stdout).toBe("");
    expect(none.stderr).toBe(
      `portcullis deny --next: no approval request can be decided with --next: the gateway of the one pending request does not vouch for it (a gateway holds a mark of each request it makes, with its review; this row was written by another process, or rewritten since); read it with ${approvals} and decide one by its ID only if a gateway printed that ID for you.\n`,
    );

    // approve ID stays possible (the human may know the ID to be theirs), with a warning before
    // the passphrase; the gateway honours no grant of a review it did not write (honoured.ts)
    const approve = await cli(stateDir, ["approve", FORGED_REQUEST, "--for", "call"]);
    expect(approve.code, approve.stderr).toBe(0);
    expect(approve.stdout).toContain(
      `approve: warning: the gateway of ${FORGED_REQUEST} does not vouch for it (it holds no mark of this request with this review): the row may have been written by another process; approve it only if a gateway printed this ID for you\n`,
    );
    expect(approve.stdout).toContain(`approved ${FORGED_REQUEST}`);
    expect(await pending(stateDir)).toEqual([]);
  });
});
