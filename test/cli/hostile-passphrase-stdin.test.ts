// docs/security.md, "Why the passphrase is read from `/dev/tty`": the command an agent runs gets
// its stdin from the agent, so the passphrase is never read from stdin, nor from an argument or
// an environment variable; a process with no controlling terminal and no
// PORTCULLIS_PASSPHRASE_FILE cannot be prompted and gets exit 2. Here the agent has the right
// passphrase and offers it every way it can at once: on stdin, in variables named as a reader
// might look for it. Every command that asks for the passphrase must refuse, exit 2, with
// nothing done: the vault stays locked, the secret stays, no keyring is made. Real CLI processes,
// in a session of their own (no controlling terminal).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

/** What an agent that knows the passphrase would try besides the terminal. */
const OFFERED = {
  input: `${TEST_PASSPHRASE}\n`,
  env: {
    PORTCULLIS_PASSPHRASE: TEST_PASSPHRASE,
    PORTCULLIS_PASS: TEST_PASSPHRASE,
    PASSPHRASE: TEST_PASSPHRASE,
    PORTCULLIS_INSECURE_TEST_KDF: "1",
  },
  noTerminal: true,
} as const;

describe("the passphrase offered on stdin or in the environment, without a terminal", () => {
  it("is never taken: each command that asks for it refuses (exit 2) and does nothing", async () => {
    const stateDir = newStateDir();
    const set = await runCli(["vault", "set", "api-staging", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: passphraseEnv(),
      input: "s3cr3t-value-for-the-test\n",
    });
    expect(set.code, set.stderr).toBe(0);

    for (const args of [
      ["unlock", "--for", "1m"],
      ["vault", "rm", "api-staging"],
      ["audit", "sessions"],
      ["audit", "activity"],
      ["audit", "show", "1"],
    ]) {
      const r = await runCli(args, { stateDir, ...OFFERED, timeoutMs: 20_000 });
      const what = args.join(" ");
      expect(r.code, `${what}: ${r.stderr}`).toBe(2);
      expect(r.stderr, what).toMatch(/no terminal to read the passphrase from/);
      expect(r.stdout + r.stderr, what).not.toContain(TEST_PASSPHRASE);
    }

    // nothing was done: the secret is still there, and the vault was never unlocked
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    expect(list.code, list.stderr).toBe(0);
    const listed = JSON.parse(list.stdout) as { unlocked: unknown; secrets: { name: string }[] };
    expect(listed.secrets.map((s) => s.name)).toEqual(["api-staging"]);
    expect(listed.unlocked).toBe(false);
  });

  it("init makes no keyring from it", async () => {
    const stateDir = join(tempDir("portcullis-stdin-init-"), "state");
    const r = await runCli(["init", "--state-dir", stateDir], { ...OFFERED, timeoutMs: 20_000 });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/no terminal to read the passphrase from/);
    expect(existsSync(join(stateDir, "keyring.json"))).toBe(false);
  });
});
