// A temporary file of a keyring rewrite (keyring.json.PID.HEX.tmp: the keyring's keys, sealed
// under the passphrase that rewrite was given) left by a killed command, whose pid has since been
// taken by another process. Judged by that pid alone, it looked in use for as long as the other
// process lived (a long-lived daemon, the next boot's): never removed by the next rewrite, never
// reported by `portcullis doctor`. Now a file older than a minute is left over unless a live
// process holds the rewrite lock (a rewrite stopped mid-way may still rename it); a young file of
// a live pid (an init under way) is left alone. What each would catch: the old file kept or
// unreported (without the fix); a young file of a live pid taken (an init's file removed under
// it); an old one taken while a live process holds the rewrite lock. Real CLI processes, a real
// process holding the reused pid (and, for one step, named by the lock file as its holder).
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { processStartTime } from "../../src/identity/proc.js";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { changeByCli, keyringText } from "../helpers/passphraseChange.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A live process: the one the pid in a killed rewrite's file name now names. */
function otherProcess(): ChildProcess {
  const child = spawn("sleep", ["60"], { stdio: "ignore" });
  cleanup.push(() => {
    child.kill("SIGKILL");
  });
  return child;
}

async function doctorFindings(stateDir: string): Promise<{ code: number | null; flagged: string }> {
  const doctor = await runCli(["doctor", "--json"], { stateDir });
  const findings = (JSON.parse(doctor.stdout) as { findings: { ok: boolean; what: string }[] }).findings;
  return {
    code: doctor.code,
    flagged: findings
      .filter((f) => !f.ok)
      .map((f) => f.what)
      .join("\n"),
  };
}

it("a killed rewrite's temporary file whose pid another process now has: doctor names it and the next change removes it; a young one is kept", async () => {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const other = otherProcess();
  const pid = other.pid!;
  const old = join(stateDir, `keyring.json.${pid}.0123456789ab.tmp`);
  const young = join(stateDir, `keyring.json.${pid}.ba9876543210.tmp`);
  writeFileSync(old, keyringText(stateDir), { mode: 0o600 });
  writeFileSync(young, keyringText(stateDir), { mode: 0o600 });
  const hourAgo = new Date(Date.now() - 3_600_000);
  utimesSync(old, hourAgo, hourAgo);

  // a live process holds the rewrite lock: a rewrite under way may still rename its file
  const lock = join(stateDir, "keyring.json.upgrade.lock");
  writeFileSync(lock, JSON.stringify({ pid, startTime: processStartTime(pid) }), { mode: 0o600 });
  expect((await doctorFindings(stateDir)).flagged).not.toContain(".tmp");
  rmSync(lock);

  const found = await doctorFindings(stateDir);
  expect(found.code).toBe(1);
  expect(found.flagged).toContain(old);
  expect(found.flagged).not.toContain(young);

  const changed = await changeByCli(stateDir, TEST_PASSPHRASE, "a passphrase after the reuse");
  expect(changed.code, changed.stderr).toBe(0);
  expect(existsSync(old)).toBe(false);
  expect(existsSync(young)).toBe(true);
  expect(other.exitCode).toBeNull(); // the process that has the pid now was never touched
}, 30_000);
