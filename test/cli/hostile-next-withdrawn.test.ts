// The agent races the human's `approve --next`. It asks for something harmless (status on
// "alpha") and, behind it, for what it wants (wipe on "beta"). The human reads the list and types
// `portcullis approve --next --for session`, meaning the first; the agent ends alpha's gateway
// just before, which withdraws its request, so --next decides beta's. Nothing can stop a human
// from approving what is printed; what is asked of them must say what it is, in the lines they
// read as they type the passphrase, not only in the review above them. Real gateways in front of
// the catalog fixture, the real CLI.
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { removeDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const INPUTS = { type: "object", properties: {} };

async function gateway(stateDir: string, label: string, tool: string) {
  const cat = makeCatalog([{ name: tool, description: `${tool}.`, inputSchema: INPUTS }]);
  const gw = await startGateway({
    stateDir,
    args: ["--label", label, "--approval-timeout", "60000", "--", ...fixtureCommand("catalog")],
    env: cat.env,
  });
  cleanup.push(
    () => gw.close(),
    () => cat.cleanup(),
  );
  await gw.client.listTools();
  return gw;
}

describe("approve --next when the agent withdraws the request the human meant", () => {
  it("decides the next one, and names its tool and server in the line that asks for the passphrase", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const alpha = await gateway(stateDir, "alpha", "status");
    const beta = await gateway(stateDir, "beta", "wipe");
    const seen = new Set<string>();
    void alpha.client.callTool({ name: "status", arguments: {} }).catch(() => {});
    const meant = await nextStoredRequest(stateDir, seen);
    const wipe = beta.client.callTool({ name: "wipe", arguments: {} }, undefined, { timeout: 90_000 });
    wipe.catch(() => {}); // awaited below
    const other = await nextStoredRequest(stateDir, seen);
    expect([meant.tool, other.tool]).toEqual(["status", "wipe"]);

    await alpha.close(); // the agent withdraws the request the human is about to approve

    const r = await runCli(["approve", "--next", "--for", "session", "--state-dir", stateDir], {
      env: passphraseEnv(),
      noTerminal: true,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`approved ${other.request}`);
    const ask = r.stdout.split("\n").find((l) => l.startsWith("To approve"));
    expect(ask).toBe(
      "To approve wipe on beta for this agent run and execution epoch (until the run ends or the server changes): the passphrase confirms it.",
    );
    expect((await wipe).isError).toBeFalsy();
  }, 60_000);
});
