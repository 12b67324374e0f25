// Rows forged beside a running gateway's real request (src/approval/vouch.ts): `approvals --watch
// --json` says of each pending request whether its gateway vouches for it, as the list's --json
// does (its "pending" lines lacked the field: a forged copy read as the real one there); and when
// `--next` finds nothing to take and passed by rows of both kinds (a gateway that is no portcullis
// by its command line, and one that does not vouch for the row), its message counts both (it
// counted only the first kind). Linux only (elsewhere no gateway vouches). A real gateway in front
// of the catalog fixture, real requests, forged rows written with SQLite, the CLI.
import { afterEach, describe, expect, it } from "vitest";
import { pending } from "../helpers/approvals.js";
import { watchApprovalsJson } from "../helpers/approvalsWatch.js";
import { waitFor } from "../helpers/files.js";
import { decoyProcess, deployGateway, forgeInOtherRun, forgeInSameRun } from "../helpers/forgedRequests.js";
import { runCli } from "../helpers/gateway.js";
import { passphraseEnv } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const cli = (stateDir: string, args: string[]) =>
  runCli([...args, "--state-dir", stateDir], { env: passphraseEnv(), noTerminal: true });

const SAME_RUN = "01M95GYS1Q2PM811SG8AHB299F";
const OTHER_RUN = "01M95GYS1Q2PM811SG8AHB300G";

async function gatewayWithRequest() {
  const { stateDir, ask } = await deployGateway(cleanup);
  return { stateDir, real: await ask("one") };
}

describe.skipIf(process.platform !== "linux")("forged rows beside a running gateway's request", () => {
  it("approvals --watch --json says gatewayVouches on each pending line: true for the real, false for the forged", async () => {
    const { stateDir, real } = await gatewayWithRequest();
    forgeInSameRun(stateDir, real.request, SAME_RUN);
    const { lines } = watchApprovalsJson(stateDir, cleanup);
    const pendingLines = () =>
      lines<{ change: string; request: { request: string; gatewayVouches?: unknown } }>().filter(
        (l) => l.change === "pending",
      );
    await waitFor(() => pendingLines().length === 2, 15_000, "two pending lines from the watcher");
    expect(
      Object.fromEntries(pendingLines().map((l) => [l.request.request, l.request.gatewayVouches])),
    ).toEqual({
      [SAME_RUN]: false,
      [real.request]: true,
    });
  });

  it("--next with nothing to take counts the rows passed by of both kinds", async () => {
    const { stateDir, real } = await gatewayWithRequest();
    forgeInSameRun(stateDir, real.request, SAME_RUN);
    forgeInOtherRun(stateDir, real.request, OTHER_RUN, "forged-run-01", decoyProcess(cleanup));
    const denied = await cli(stateDir, ["deny", real.request]);
    expect(denied.code, denied.stderr).toBe(0);
    expect((await pending(stateDir)).map((p) => p.request).sort()).toEqual([OTHER_RUN, SAME_RUN].sort());

    const none = await cli(stateDir, ["deny", "--next"]);
    expect(none.code).toBe(2);
    expect(none.stdout).toBe("");
    const approvals = `'portcullis approvals --state-dir ${stateDir}'`;
    expect(none.stderr).toBe(
      `portcullis deny --next: no approval request can be decided with --next: of the 2 pending requests, the gateway of 1 is not, by its command line as read here, a portcullis gateway, and the gateway of 1 does not vouch for it (a gateway holds a mark of each request it makes, with its review): the rows may have been written by another process; read them with ${approvals} and decide one by its ID only if a gateway printed that ID for you.\n`,
    );
  });
});
