// `portcullis passphrase` when the audit chain cannot be written at the moment of its record
// (another process holds the store's write lock past the busy timeout: a database browser with an
// unsaved edit): the change is made and stands (a record of a change not made would be false, and
// undoing it could itself be cut short), exit 0, stderr says it is not recorded, `--json` has
// `auditRecord: null`. Would catch: a command that said nothing (a change missing from the chain
// unannounced), or one that reported failure over a keyring already changed (the user would take
// the old passphrase for the current one), or a change that stayed unrecorded once the store could
// be written again (the next command that takes the passphrase records it late). Real CLI, a real SQLite lock holder in another process.
import { afterEach, describe, expect, it } from "vitest";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { holdStoreLock } from "../helpers/lock.js";
import { changeByCli, withPassphrase } from "../helpers/passphraseChange.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

const NEW = "changed while the store was held";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("portcullis passphrase with the store's write lock held elsewhere", () => {
  it("changes the passphrase, says the change is not recorded, exit 0", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const lock = await holdStoreLock(stateDir);
    cleanup.push(() => lock.release());

    const r = await changeByCli(stateDir, TEST_PASSPHRASE, NEW, ["--json"], {
      PORTCULLIS_BUSY_TIMEOUT_MS: "200",
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /portcullis passphrase: warning: the passphrase was changed, but the change could not be recorded in the audit chain: .*; the next command that takes the passphrase .* records it late/,
    );
    expect(JSON.parse(r.stdout)).toMatchObject({ changed: true, auditRecord: null });
    expect(r.stdout + r.stderr).not.toContain(NEW);
    await expect(unlockKeyring(stateDir, NEW)).resolves.toBeDefined();
    await expect(unlockKeyring(stateDir, TEST_PASSPHRASE)).rejects.toThrow(/wrong passphrase/);

    // once the lock is let go, the chain still verifies (it holds the pin alone)
    await lock.release();
    const verify = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(verify.code, verify.stderr).toBe(0);
    expect(JSON.parse(verify.stdout).records).toBe(1);

    // the change's mark stayed: the next command that takes the passphrase records it, late
    const sessions = await runCli(["audit", "sessions", "--json"], { stateDir, env: withPassphrase(NEW) });
    expect(sessions.code, sessions.stderr).toBe(0);
    expect(sessions.stderr).toMatch(
      /that change was not in the audit chain .*: recorded now, late \(passphrase_changed, record 2\)/,
    );
    const after = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(after.code, after.stderr).toBe(0);
    expect(JSON.parse(after.stdout).records).toBe(2);
  });
});
