// The setup the scrub leak tests share (scrub-references-leak, scrub-deep-escapes-leak,
// scrub-percent-kept-leak, scrub-non-ascii-leak): a real gateway in front of the vaulted fixture
// server (test/fixtures/servers/vaulted.mjs), given a vault value in its environment, asked to
// return it in each of some "reveal" forms and to print each of them to stderr ("whisper" with
// {forms}); then the client's results, the gateway's stderr and every file of the state directory
// are read back by the test's own reader, none of which may hold the value.
import { expect } from "vitest";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { everyFile, storeSecret, vaultedProject } from "./helpers.js";

/** The marker of the vault entry the kit stores the value under ("api-token"). */
export const MARK = "[redacted:api-token]";

/**
 * Stores `secret`, starts a gateway in front of the vaulted server with it in API_TOKEN, and
 * checks that each of `forms` comes back as a marker in a tool result and on stderr, and that
 * `holdsValue` finds the value in none of the client's results, the gateway's stderr and the
 * state directory's files. Everything it started is stopped again, whatever fails.
 */
export async function expectNoFormReachesAnyone(
  secret: string,
  forms: readonly string[],
  holdsValue: (text: string) => boolean,
): Promise<void> {
  const cleanup: (() => Promise<unknown> | unknown)[] = [];
  try {
    const stateDir = newStateDir();
    cleanup.push(() => runCli(["lock"], { stateDir }));
    await storeSecret(stateDir, "api-token", secret, "--deliver", "env");
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    const project = vaultedProject({
      credentials: { API_TOKEN: { secret: "api-token", deliver: "env" } },
      approval: { default: "none" },
    });
    cleanup.push(() => project.cleanup());
    const gw = await startGateway({ args: ["vaulted"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());

    for (const form of forms) {
      // biome-ignore lint/suspicious/noExplicitAny: a tool result read loosely
      const r: any = await gw.client.callTool({ name: "reveal", arguments: { form, note: "ab" } });
      const text: string = r.content?.[0]?.text ?? "";
      expect(text, form).toContain(MARK);
      expect(holdsValue(text), `${form}: ${text}`).toBe(false);
      expect(holdsValue(JSON.stringify(r.structuredContent)), form).toBe(false);
    }
    await gw.client.callTool({ name: "whisper", arguments: { forms } });
    for (const form of forms) {
      const line = await gw.waitForStderr(new RegExp(`form ${form} `));
      expect(line, form).toContain(MARK);
    }
    expect(holdsValue(JSON.stringify(gw.received())), "client results").toBe(false);
    expect(holdsValue(gw.stderr()), "gateway stderr").toBe(false);
    for (const f of everyFile(stateDir))
      expect(holdsValue(Buffer.from(f.text, "latin1").toString("utf8")), f.path).toBe(false);
  } finally {
    for (const c of cleanup.reverse()) await c();
  }
}
