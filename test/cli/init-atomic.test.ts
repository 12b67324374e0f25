// `portcullis init` either leaves a keyring with its approver key pinned in the audit chain, or
// nothing: a store that cannot be opened stops it before keyring.json is written, and a pin that
// cannot be written takes the new keyring back, so a second init (once the cause is gone) works;
// so does a signal before the pin is written.
// The real CLI, as separate processes.
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sleep, tempDir } from "../helpers/files.js";
import { type CliResult, hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";

function oneSentence(r: CliResult, about: RegExp): void {
  // the cheap test key derivation is announced on a line of its own
  const said = r.stderr.replace(/^.*cheap key derivation.*\n/m, "");
  expect(said).not.toMatch(/internal error| {4}at /);
  expect(said.trim().split("\n"), r.stderr).toHaveLength(1);
  expect(said).toMatch(about);
  expect(r.code).toBe(2);
}

async function init(stateDir: string): Promise<CliResult> {
  return runCli(["init"], { stateDir, env: passphraseEnv() });
}

describe("portcullis init is all or nothing", () => {
  it("a store that cannot be opened: no keyring is left, and init works once the store can be", async () => {
    const stateDir = join(tempDir(), "state");
    mkdirSync(stateDir, { mode: 0o700 });
    const db = join(stateDir, "portcullis.db");
    mkdirSync(db); // a directory in the store's place
    oneSentence(await init(stateDir), new RegExp(`^portcullis init: the store ${db} cannot be opened`));
    expect(existsSync(join(stateDir, "keyring.json"))).toBe(false);

    rmdirSync(db);
    const again = await init(stateDir);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/pinned in the audit chain/);
    const verify = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(verify.code).toBe(0);
    expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, records: 1 });
  });

  it("a pin that cannot be written (the chain pins another keyring's key): the new keyring is taken back", async () => {
    const stateDir = join(tempDir(), "state");
    expect((await init(stateDir)).code).toBe(0);
    rmSync(join(stateDir, "keyring.json")); // lost; the store still pins its approver key
    oneSentence(
      await init(stateDir),
      /^portcullis init: the audit chain in .* already pins the approver key of another keyring/,
    );
    expect(existsSync(join(stateDir, "keyring.json"))).toBe(false);
  });

  it("an existing directory others may read: made 0700 when empty (and said), refused with the fix when it holds other files", async () => {
    const stateDir = join(tempDir(), "state");
    mkdirSync(stateDir);
    chmodSync(stateDir, 0o755);
    const made = await init(stateDir);
    expect(made.code, made.stderr).toBe(0);
    expect(statSync(stateDir).mode & 0o777).toBe(0o700);
    expect(made.stderr).toContain(`the state directory ${stateDir} was mode 755; it is now 700`);
    // what doctor would call a problem is gone
    const doctor = await runCli(["doctor", "--json"], { stateDir });
    expect(JSON.stringify(JSON.parse(doctor.stdout))).not.toMatch(/readable by others/);

    const shared = join(tempDir(), "shared");
    mkdirSync(shared);
    writeFileSync(join(shared, "notes.txt"), "mine\n");
    chmodSync(shared, 0o755);
    oneSentence(
      await init(shared),
      /already holds other files and others may read it \(mode 755\).* first run: chmod 700 /,
    );
    expect(statSync(shared).mode & 0o777).toBe(0o755);
    expect(existsSync(join(shared, "keyring.json"))).toBe(false);
  });
  it("a passphrase file that cannot be read, or a short passphrase: no state directory is left (nor the ones init made above it); one that was there stays", async () => {
    const top = join(tempDir(), "new");
    const stateDir = join(top, "nested", "state");
    const missing = { ...passphraseEnv(), PORTCULLIS_PASSPHRASE_FILE: join(tempDir(), "no-such-file") };
    const unread = await runCli(["init"], { stateDir, env: missing });
    oneSentence(unread, /^portcullis init: cannot read PORTCULLIS_PASSPHRASE_FILE/);
    expect(existsSync(top)).toBe(false);
    const short = join(tempDir(), "short");
    writeFileSync(short, "2short\n", { mode: 0o600 });
    oneSentence(
      await runCli(["init"], { stateDir, env: { ...passphraseEnv(), PORTCULLIS_PASSPHRASE_FILE: short } }),
      /at least 8 characters/,
    );
    expect(existsSync(top)).toBe(false);
    // a directory of the user's own is never removed
    const own = join(tempDir(), "own");
    mkdirSync(own, { mode: 0o700 });
    oneSentence(
      await runCli(["init"], { stateDir: own, env: missing }),
      /cannot read PORTCULLIS_PASSPHRASE_FILE/,
    );
    expect(statSync(own).isDirectory()).toBe(true);
    // a file in the way is said before any passphrase is read, and nothing is made
    const file = join(tempDir(), "a-file");
    writeFileSync(file, "x\n");
    oneSentence(
      await runCli(["init"], { stateDir: join(file, "state"), env: missing }),
      /is not a directory \(a file is in its place or on its path\)/,
    );
    const made = await init(stateDir);
    expect(made.code, made.stderr).toBe(0);
    expect(existsSync(join(stateDir, "keyring.json"))).toBe(true);
  });

  it("interrupted between writing the keyring and pinning its key (the second key derivation): the keyring is taken back", async () => {
    const stateDir = join(tempDir(), "state");
    const keyring = join(stateDir, "keyring.json");
    // the real key derivation, so that the second one (for the pin) lasts long enough to land in
    const env = hostEnv({ ...passphraseEnv(), PORTCULLIS_HOME: stateDir, PORTCULLIS_INSECURE_TEST_KDF: "0" });
    const child = spawn(NODE, [CLI, "init"], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    for (let i = 0; i < 3000 && !existsSync(keyring); i++) await sleep(2);
    expect(existsSync(keyring)).toBe(true);
    child.kill("SIGTERM");
    expect(await exited, stderr).toBe(143);
    expect(stderr).toBe("portcullis init: interrupted; no keyring was created (run init again).\n");
    expect(existsSync(keyring)).toBe(false);
    // init made the directory: it took it back, its store with it
    expect(existsSync(stateDir)).toBe(false);
    const again = await init(stateDir);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/pinned in the audit chain/);
  });
});
