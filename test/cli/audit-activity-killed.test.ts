// A passphrase command killed with SIGKILL while it gives an old keyring (made before decisions
// were signed: no approver key) its approver key. `audit activity`, `audit sessions`, `audit
// show`, `approve` and `deny` all do this the first time they take the passphrase
// (src/approval/pin.ts pinnedSigner → src/keyring/keyring.ts addApproverKey), under a lock file,
// `keyring.json.upgrade.lock`, that names its owner (pid and start time, src/util/ownedLock.ts):
// the next command finds the owner gone and takes the lock over. Before, the file named nobody,
// and every later command that upgraded waited 10 s for it and failed ("remove …upgrade.lock if
// none is running"), until a human removed it by hand. The keyring stays whole either way (it is
// replaced through a temporary file and a rename).
//
// The kill point is observable without timing guesses: the keyring is made by the real `init`
// with the real scrypt parameters, so the command holds the lock for the whole of a key
// derivation (hundreds of ms, as test/cli/init-killed.test.ts uses it); the test kills it as
// soon as the lock file appears and checks it is still there afterwards.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { alive, sleep, tempDir } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The real key derivation: the passphrase file of passphraseEnv, without the cheap test KDF. */
const realKdf = () => ({ ...passphraseEnv(), PORTCULLIS_INSECURE_TEST_KDF: "0" });

/** The records in the store's audit chain, by header type. */
function chainTypes(stateDir: string): string[] {
  const db = openStore(stateDir);
  try {
    return (db.prepare("SELECT record FROM audit_records ORDER BY seq").pluck().all() as Buffer[]).map(
      (r) => /"type":"([a-z_]+)"/.exec(r.toString("latin1", 0, r.indexOf(0x0a)))![1]!,
    );
  } finally {
    db.close();
  }
}

describe("a passphrase command killed while it upgrades an old keyring", () => {
  it("leaves a keyring that opens, and the next command upgrades it instead of waiting on a dead lock", async () => {
    // an old state directory: a keyring without an approver key, a store with no pin
    const stateDir = join(tempDir(), "state");
    const init = await runCli(["init"], { stateDir, env: realKdf() });
    expect(init.code, init.stderr).toBe(0);
    const keyring = join(stateDir, "keyring.json");
    const old = JSON.parse(readFileSync(keyring, "utf8")) as Record<string, unknown>;
    delete old.approver;
    writeFileSync(keyring, `${JSON.stringify(old, null, 2)}\n`, { mode: 0o600 });
    for (const f of ["portcullis.db", "portcullis.db-wal", "portcullis.db-shm"])
      rmSync(join(stateDir, f), { force: true });

    const lock = `${keyring}.upgrade.lock`;
    const child: ChildProcess = spawn(NODE, [CLI, "audit", "activity", "--json"], {
      env: hostEnv({ PORTCULLIS_HOME: stateDir, ...realKdf() }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("close", (_c, s) => resolve(s)));
    cleanup.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    });
    let seen = false;
    for (let i = 0; i < 10_000 && child.exitCode === null; i++) {
      seen = existsSync(lock);
      if (seen) break;
      await sleep(2);
    }
    expect(seen, stderr).toBe(true);
    const pid = child.pid!;
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    expect(alive(pid)).toBe(false);
    // it landed while the upgrade held its lock (it derives the key again under it)
    expect(existsSync(lock)).toBe(true);

    // the keyring is whole: every key in it opens with the passphrase
    await expect(unlockKeyring(stateDir, TEST_PASSPHRASE)).resolves.toBeDefined();

    // the next command of the same kind completes: the key is added and pinned
    const again = await runCli(["audit", "activity", "--json"], { stateDir, env: realKdf() });
    expect(again.code, again.stderr).toBe(0);
    expect(chainTypes(stateDir)).toEqual(["approver_key_pinned"]);
    expect((await unlockKeyring(stateDir, TEST_PASSPHRASE)).signer).not.toBeNull();
    const verify = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(verify.code, verify.stderr).toBe(0);
    // About six real key derivations (scrypt, 128 MiB each) in three processes and this one:
    // about 4 s on a 2-core machine running the suite, but past the default 60 s when it is
    // loaded many times over (seen so). Nothing here is about time.
  }, 180_000);
});
