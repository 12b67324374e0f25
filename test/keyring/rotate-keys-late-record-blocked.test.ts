// `portcullis rotate-keys` killed after its rename of keyring.json, before its rotation record,
// and then the next command that takes the passphrase cannot record it either: another process
// holds the store's write lock past PORTCULLIS_BUSY_TIMEOUT_MS. What it would catch: a command that
// crashes (or says nothing) when the late record cannot be written, a gateway that honours a
// decision while the chain and keyring.json disagree (the session grant of the key rotated away, or
// the new key's decision before its record), a record written twice once the lock is let go. A real
// gateway in front of the inventory fixture; real CLI processes; a real lock holder.
import { afterEach, expect, it } from "vitest";
import { loadPublicKeyring } from "../../src/keyring/keyring.js";
import { nextStoredRequest } from "../helpers/approvals.js";
import { held } from "../helpers/browser.js";
import { removeDir } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { fsGate, killedAtGate } from "../helpers/killedAtGate.js";
import { holdStoreLock } from "../helpers/lock.js";
import { passphraseFile, withPassphrase } from "../helpers/passphraseChange.js";
import { makeProject } from "../helpers/project.js";
import { pinChain, readStatusGranted } from "../helpers/rotation.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const NEW = "the passphrase of a rotation left unrecorded";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** `portcullis rotate-keys` SIGKILLed right after its rename of keyring.json (a preload holds it there). */
async function rotationKilledAfterRename(stateDir: string): Promise<void> {
  const onCleanup = (c: () => Promise<void> | void) => cleanup.push(c);
  const gate = fsGate(onCleanup, "rotate-keys", "renameSync", "keyring.json", "after");
  const env = { ...passphraseEnv(), PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(NEW) };
  await killedAtGate(onCleanup, stateDir, ["rotate-keys"], env, gate);
}

/** The chain of pins as a gateway follows it: each link's approver key id. */
const chainKeys = (stateDir: string) => pinChain(stateDir) ?? [];

it("a late rotation record the store's lock keeps out: said on stderr, nothing honoured meanwhile, recorded once after", async () => {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  const gw = await startInventory(project, ["--approval-timeout", "60000"], { stateDir });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  const seen = new Set<string>();
  const forwarded = () => project.records().filter((r) => r.tool === "read_status").length;

  // a session grant signed with the key about to be rotated away
  await readStatusGranted(gw, stateDir, seen);
  const oldKeyId = loadPublicKeyring(stateDir)!.approver!.keyId;

  await rotationKilledAfterRename(stateDir);
  const newKeyId = loadPublicKeyring(stateDir)!.approver!.keyId;
  expect(newKeyId).not.toBe(oldKeyId);
  expect(chainKeys(stateDir)).toEqual([oldKeyId]);

  // the running gateway: the old key's session grant no longer covers a call (keyring.json and the
  // chain disagree), so the call asks a human
  const second = held(gw.client.callTool({ name: "read_status", arguments: {} }));
  const r2 = await nextStoredRequest(stateDir, seen);
  const listed = await runCli(["grants"], { stateDir });
  expect(listed.code, listed.stderr).toBe(0);
  expect(listed.stdout).toContain("NOT HONOURED");

  // the next command that takes the passphrase, while another process holds the store's lock
  const lock = await holdStoreLock(stateDir);
  let blocked: Awaited<ReturnType<typeof runCli>>;
  try {
    blocked = await runCli(["approve", r2.request, "--for", "session"], {
      stateDir,
      env: { ...withPassphrase(NEW), PORTCULLIS_BUSY_TIMEOUT_MS: "300" },
    });
  } finally {
    await lock.release();
  }
  // exit 1, naming the rotation left unrecorded and why (not "keyring.json was replaced or edited")
  expect(blocked.code, blocked.stderr).toBe(1);
  expect(blocked.stderr).toContain(
    `approver key ${newKeyId} is the new key of a rotation not yet recorded in the audit chain, and it could not be recorded now (database is locked)`,
  );
  expect(blocked.stderr).not.toContain("replaced or edited");
  expect(blocked.stderr).not.toMatch(/\n\s+at |TypeError|RangeError/);
  expect(chainKeys(stateDir)).toEqual([oldKeyId]);
  expect(forwarded()).toBe(1);

  // the lock let go: the next command records the rotation, once, and its decision is honoured
  const later = await runCli(["approve", r2.request, "--for", "session"], {
    stateDir,
    env: withPassphrase(NEW),
  });
  expect(later.code, later.stderr).toBe(0);
  expect(later.stderr).toMatch(
    /the key rotation its command left unrecorded is recorded now \(audit record \d+\)/,
  );
  expect((await second).isError).toBeFalsy();
  expect(forwarded()).toBe(2);
  const again = await runCli(["audit", "sessions"], { stateDir, env: withPassphrase(NEW) });
  expect(again.code, again.stderr).toBe(0);
  expect(again.stderr).not.toContain("recorded now");
  expect(chainKeys(stateDir)).toEqual([oldKeyId, newKeyId]);
  expect((await runCli(["audit", "verify"], { stateDir })).code).toBe(0);
}, 60_000);
