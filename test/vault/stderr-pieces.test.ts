// A server's stderr reaches the host's terminal or log through the gateway's own stderr, each line
// scrubbed of the values the vault released to it (src/supervisor/stderrLines.ts). A careless
// server does not only echo a value whole: it logs a key's first characters, or prints an error
// that quotes the start of what it failed on (node's JSON parse error quotes ten characters, as
// when a server reads its credential variable as JSON). No form of the value matches such a piece;
// any stretch of 8 characters or more of a released value is taken out too. A real gateway in
// front of the vaulted fixture, the value released to it by the real vault (env delivery).
import { afterEach, describe, expect, it } from "vitest";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret, tracesOf, vaultedProject } from "./helpers.js";

const VALUE = "sk-vault-7Qm2Xw9Lp4Rt8Zk3Hn6Bv1Cy5";
const MARK = "[redacted:payments]";

/** Any form of VALUE, or any 8 characters of it as written, found in `text`. */
const traces = (text: string): string[] => tracesOf(VALUE, text);

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a server's stderr shows no piece of a released value", () => {
  it("a key's start, and a JSON parse error quoting its first ten characters: taken out", async () => {
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    await storeSecret(stateDir, "payments", VALUE, "--deliver", "env");
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    const project = vaultedProject({
      credentials: { API_TOKEN: { secret: "payments", deliver: "env" } },
      approval: { default: "none", tools: {} },
    });
    cleanup.push(() => project.cleanup());
    const gw = await startGateway({ args: ["vaulted"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());

    await gw.client.callTool({ name: "whisper", arguments: { short: true } });
    // the whole value, after the pieces on stderr: once it is shown, they are
    await gw.waitForStderr(/token=\[redacted:payments\] b64=\[redacted:payments\]/);
    expect(traces(gw.stderr())).toEqual([]);
    // each line still says what the server said, the piece taken out
    expect(gw.stderr()).toContain(
      `[vaulted] config: API_TOKEN is not JSON: Unexpected token 's', "${MARK}"... is not valid JSON`,
    );
    expect(gw.stderr()).toContain(`[vaulted] using the key ${MARK}… (${VALUE.length} characters)`);
    // and a line of the server's that quotes none of it is shown as written
    expect(gw.stderr()).toMatch(/^\[vaulted\] .*pid=\d+$/m);
  }, 60_000);
});
