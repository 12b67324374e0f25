// A passphrase change `portcullis passphrase` could not record (the store's write lock held
// elsewhere) leaves its mark, keyring.json.change-unrecorded (src/approval/lateWrapping.ts). Would
// catch: doctor saying nothing of it (the chain lacks a record of a security event, and nothing
// told the user which command records it), and `vault set` and `unlock`, which take the passphrase
// with the store open, leaving it unrecorded where approve, deny and the audit commands record it.
// Real CLI, a real SQLite lock holder in another process.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
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

/** A state directory whose passphrase is NEW, changed while the store could not be written: its mark left. */
async function unrecordedChange(): Promise<string> {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const lock = await holdStoreLock(stateDir);
  const r = await changeByCli(stateDir, TEST_PASSPHRASE, NEW, [], { PORTCULLIS_BUSY_TIMEOUT_MS: "200" });
  await lock.release();
  expect(r.code, r.stderr).toBe(0);
  expect(existsSync(mark(stateDir))).toBe(true);
  return stateDir;
}

const mark = (stateDir: string) => join(stateDir, "keyring.json.change-unrecorded");

type Finding = { ok: boolean; what: string; next: string };
async function markFindings(stateDir: string): Promise<{ code: number | null; found: Finding[] }> {
  const r = await runCli(["doctor", "--json", "--state-dir", stateDir], { env: { PORTCULLIS_HOME: "" } });
  const found = (JSON.parse(r.stdout) as { findings: Finding[] }).findings.filter((f) =>
    f.what.includes("change-unrecorded"),
  );
  return { code: r.code, found };
}

async function records(stateDir: string): Promise<number> {
  const verify = await runCli(["audit", "verify", "--json"], { stateDir });
  expect(verify.code, verify.stderr).toBe(0);
  return JSON.parse(verify.stdout).records;
}

describe("a passphrase change left unrecorded", () => {
  it("doctor reports it with the command that records it; vault set records it late", async () => {
    const stateDir = await unrecordedChange();
    const before = await markFindings(stateDir);
    expect(before.code).toBe(1);
    expect(before.found).toHaveLength(1);
    expect(before.found[0]!.ok).toBe(false);
    expect(before.found[0]!.what).toMatch(
      /the keyring's passphrase was changed by .* at .*, and the audit chain may hold no record of it/,
    );
    expect(before.found[0]!.next).toMatch(
      new RegExp(`records the change late .*: portcullis audit sessions --state-dir ${stateDir}$`),
    );
    expect(await records(stateDir)).toBe(1); // the pin alone

    const set = await runCli(["vault", "set", "tok", "--deliver", "env", "--from-stdin"], {
      stateDir,
      env: withPassphrase(NEW),
      input: "value-1234567\n",
    });
    expect(set.code, set.stderr).toBe(0);
    expect(set.stderr).toMatch(
      /^portcullis vault set: the keyring's passphrase was changed by .*: recorded now, late \(passphrase_changed, record 2\)\n/,
    );
    expect(existsSync(mark(stateDir))).toBe(false);
    expect((await markFindings(stateDir)).found).toEqual([]);
    expect(await records(stateDir)).toBeGreaterThanOrEqual(2);
  });

  it("unlock records it late too", async () => {
    const stateDir = await unrecordedChange();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    const unlock = await runCli(["unlock"], { stateDir, env: withPassphrase(NEW) });
    expect(unlock.code, unlock.stderr).toBe(0);
    expect(unlock.stderr).toMatch(
      /^portcullis unlock: the keyring's passphrase was changed by .*: recorded now, late \(passphrase_changed, record 2\)\n/,
    );
    expect(existsSync(mark(stateDir))).toBe(false);
  });

  it("doctor says a mark of a change that did not take effect records nothing", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    writeFileSync(
      mark(stateDir),
      JSON.stringify({ wrapping: "not this keyring's", headSeq: 1, by: "me", at: "2026-01-01T00:00:00Z" }),
      { mode: 0o600 },
    );
    const { found } = await markFindings(stateDir);
    expect(found).toHaveLength(1);
    expect(found[0]!.ok).toBe(true);
    expect(found[0]!.what).toMatch(/did not take effect .*: it records nothing$/);
  });
});
