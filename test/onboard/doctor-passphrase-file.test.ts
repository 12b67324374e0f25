// doctor and PORTCULLIS_PASSPHRASE_FILE: every command that reads the passphrase refuses a file
// other users may read or change, or another user's (test/cli/passphrase-file-mode.test.ts);
// doctor, when the variable is set, reports such a file first, with the chmod to run, asking the
// commands' own question (src/cli/passphraseFile.ts). It never opens the file (a pipe would wait
// for its writer, or give away the passphrase meant for another command) and never prints it.
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { TEST_PASSPHRASE } from "../helpers/state.js";
import { expectNoValue, type Finding, withState } from "./doctorKit.js";
import { type FakeUser, fakeUsersOfEachTest } from "./hosts.js";

const user = fakeUsersOfEachTest();

/** doctor --json and the text report with the variable set to `file`; its findings about the variable. */
async function doctorWith(u: FakeUser, file: string | undefined) {
  const env = { ...u.env, ...(file === undefined ? {} : { PORTCULLIS_PASSPHRASE_FILE: file }) };
  const json = await runCli(["doctor", "--json"], { env, cwd: u.project });
  const text = await runCli(["doctor"], { env, cwd: u.project });
  const findings = (JSON.parse(json.stdout).findings as Finding[]).filter((f) =>
    f.what.includes("PORTCULLIS_PASSPHRASE_FILE"),
  );
  expectNoValue([json.stdout, json.stderr, text.stdout, text.stderr], [TEST_PASSPHRASE]);
  return { json, text, findings };
}

function passFile(u: FakeUser, mode: number): string {
  const file = join(u.root, "passphrase");
  writeFileSync(file, `${TEST_PASSPHRASE}\n`, { mode: 0o600 });
  chmodSync(file, mode);
  return file;
}

const USES = "so every command that asks for the passphrase refuses it";

describe("doctor and PORTCULLIS_PASSPHRASE_FILE", () => {
  it("a file of mode 644 is a problem with its chmod 600, as unlock finds it; once chmod 600 it is not", async () => {
    const u = user();
    withState(u);
    const file = passFile(u, 0o644);
    const { json, text, findings } = await doctorWith(u, file);
    expect(json.code).toBe(1);
    expect(findings).toEqual([
      {
        ok: false,
        what: `PORTCULLIS_PASSPHRASE_FILE (${file}): other users may read or change it (mode 644), ${USES} (the passphrase opens the keyring: whoever reads it may approve in your name)`,
        next: `chmod 600 ${file}`,
      },
    ]);
    expect(text.stdout).toContain(`PORTCULLIS_PASSPHRASE_FILE (${file}): other users may read or change it`);
    expect(text.stdout).toContain(`next: chmod 600 ${file}`);

    // what doctor says is what a command finds
    const env = { ...u.env, PORTCULLIS_PASSPHRASE_FILE: file, PORTCULLIS_INSECURE_TEST_KDF: "1" };
    const unlock = await runCli(["unlock", "--for", "1m"], { env, cwd: u.project });
    expect(unlock.code).toBe(2);
    expect(unlock.stderr).toContain(`chmod 600 ${file}`);

    chmodSync(file, 0o600);
    expect((await doctorWith(u, file)).findings).toEqual([]);
    const taken = await runCli(["unlock", "--for", "1m"], { env, cwd: u.project });
    expect(taken.code, taken.stderr).toBe(0);
  });

  it("unset: nothing is said of it; a file that is not there, or a directory, is a problem", async () => {
    const u = user();
    withState(u);
    expect((await doctorWith(u, undefined)).findings).toEqual([]);
    const missing = join(u.root, "no-such-file");
    expect((await doctorWith(u, missing)).findings).toEqual([
      expect.objectContaining({
        ok: false,
        what: `PORTCULLIS_PASSPHRASE_FILE (${missing}): cannot read it: it does not exist; check the path (ENOENT), ${USES}`,
      }),
    ]);
    expect((await doctorWith(u, u.project)).findings).toEqual([
      expect.objectContaining({
        ok: false,
        what: `PORTCULLIS_PASSPHRASE_FILE (${u.project}): cannot read it: it is a directory, not a file (EISDIR), ${USES}`,
      }),
    ]);
  });

  it("a named pipe is not opened (no writer is waited for): one of 600 passes, one of 644 is a problem", async () => {
    const u = user();
    withState(u);
    const fifo = join(u.root, "pipe");
    expect(spawnSync("mkfifo", ["-m", "600", fifo]).status).toBe(0);
    // no process ever writes this pipe: a doctor that opened it would wait until runCli gives up
    expect((await doctorWith(u, fifo)).findings).toEqual([]);
    chmodSync(fifo, 0o644);
    expect((await doctorWith(u, fifo)).findings).toEqual([
      expect.objectContaining({ ok: false, next: `chmod 600 ${fifo}` }),
    ]);
  });

  it.skipIf(typeof process.getuid !== "function" || process.getuid() !== 0)(
    "another user's file, even of mode 600, is a problem that chmod does not fix",
    async () => {
      const u = user();
      withState(u);
      const file = passFile(u, 0o600);
      chownSync(file, 65534, 65534);
      expect((await doctorWith(u, file)).findings).toEqual([
        {
          ok: false,
          what: `PORTCULLIS_PASSPHRASE_FILE (${file}): it belongs to another user (uid 65534; this is uid 0), who may read or change it (mode 600), ${USES} (the passphrase opens the keyring: whoever reads it may approve in your name)`,
          next: "put the passphrase in a file of your own, made yours alone with chmod 600 FILE, and set PORTCULLIS_PASSPHRASE_FILE to that file",
        },
      ]);
    },
  );

  it("PORTCULLIS_NEW_PASSPHRASE_FILE (portcullis passphrase's new one) of mode 644 is reported as portcullis passphrase refuses it", async () => {
    const u = user();
    withState(u);
    const file = passFile(u, 0o644);
    const env = { ...u.env, PORTCULLIS_NEW_PASSPHRASE_FILE: file };
    const json = await runCli(["doctor", "--json"], { env, cwd: u.project });
    expect(json.code).toBe(1);
    const findings = (JSON.parse(json.stdout).findings as Finding[]).filter((f) =>
      f.what.includes("PASSPHRASE_FILE"),
    );
    expect(findings).toEqual([
      {
        ok: false,
        what: `PORTCULLIS_NEW_PASSPHRASE_FILE (${file}): other users may read or change it (mode 644), so portcullis passphrase refuses it (the passphrase opens the keyring: whoever reads it may approve in your name)`,
        next: `chmod 600 ${file}`,
      },
    ]);
    expectNoValue([json.stdout, json.stderr], [TEST_PASSPHRASE]);
    chmodSync(file, 0o600);
    const fixed = await runCli(["doctor", "--json"], { env, cwd: u.project });
    expect(
      (JSON.parse(fixed.stdout).findings as Finding[]).filter((f) => f.what.includes("PASSPHRASE_FILE")),
    ).toEqual([]);
  });
});
