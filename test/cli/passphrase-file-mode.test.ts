// PORTCULLIS_PASSPHRASE_FILE must be this user's alone (src/cli/passphraseFile.ts): the passphrase
// in it opens the keyring, so a file other users may read or change (group or other bits: the
// usual umask writes 0644), or another user's file, is refused by every command that reads it,
// before a byte is read, in one sentence naming the variable, the file, its mode and the fix,
// and never the passphrase. Real CLI processes; the file holds the right passphrase, so only the
// file's mode or owner is refused. The machine may run as root: the mode bits are what is
// checked, not what access() answers, so it binds root as well.
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest, pending } from "../helpers/approvals.js";
import { tempDir } from "../helpers/files.js";
import { type CliResult, runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A file holding the right passphrase, made with `mode` (the umask does not narrow a chmod). */
function passFile(mode: number, name = "passphrase"): string {
  const file = join(tempDir("portcullis-pass-mode-"), name);
  writeFileSync(file, `${TEST_PASSPHRASE}\n`, { mode: 0o600 });
  chmodSync(file, mode);
  return file;
}

const env = (file: string) => ({ PORTCULLIS_PASSPHRASE_FILE: file, PORTCULLIS_INSECURE_TEST_KDF: "1" });

/** The refusal of a file others may read or change: one line, exit 2, naming all a human needs. */
function expectSharedRefused(r: CliResult, what: string, file: string, mode: string, shell = file): void {
  expect(r.code, `${what}: ${r.stderr}`).toBe(2);
  expect(r.stdout, what).not.toContain(TEST_PASSPHRASE);
  expect(r.stderr, what).not.toContain(TEST_PASSPHRASE);
  expect(r.stderr, what).toMatch(/^portcullis[^\n]*\n$/);
  expect(r.stderr, what).toContain(
    `PORTCULLIS_PASSPHRASE_FILE (${file}): other users may read or change it (mode ${mode}), and the passphrase in it opens the keyring (whoever reads it may approve in your name); make it yours alone with chmod 600 ${shell}, then run the command again`,
  );
}

describe("PORTCULLIS_PASSPHRASE_FILE that others may read or change", () => {
  it("is refused by every command that reads the passphrase, exit 2, changing nothing; once chmod 600, the same file is taken", async () => {
    const stateDir = newStateDir();
    const gw = await startGateway({ args: ["--label", "asks", "--", ...fixtureCommand("echo")], stateDir });
    cleanup.push(() => gw.close());
    void gw.client.callTool({ name: "echo", arguments: { message: "hi" } }).catch(() => {});
    const req = await nextStoredRequest(stateDir);
    const file = passFile(0o644);

    const commands: { args: string[]; input?: string }[] = [
      { args: ["unlock", "--for", "1m"] },
      { args: ["vault", "set", "api", "--from-stdin", "--deliver", "env"], input: "a-value-of-the-secret" },
      { args: ["approve", req.request, "--for", "session"] },
      { args: ["approve", "--next", "--for", "session"] },
      { args: ["deny", req.request, "--reason", "no"] },
      { args: ["deny", "--next"] },
      { args: ["audit", "sessions"] },
      { args: ["audit", "activity", "--json"] },
    ];
    for (const { args, input } of commands) {
      const r = await runCli(args, { stateDir, env: env(file), input });
      expectSharedRefused(r, args.join(" "), file, "644");
    }
    // init, on a state directory that is not there yet: none is made
    const fresh = join(tempDir(), "state");
    expectSharedRefused(await runCli(["init"], { stateDir: fresh, env: env(file) }), "init", file, "644");
    expect(existsSync(fresh)).toBe(false);

    // nothing was decided or stored, and the file is as it was
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([req.request]);
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    expect(JSON.parse(list.stdout).secrets).toEqual([]);
    expect(readFileSync(file, "utf8")).toBe(`${TEST_PASSPHRASE}\n`);

    // the fix the sentence gives is enough
    chmodSync(file, 0o600);
    const approved = await runCli(["approve", req.request, "--for", "session"], { stateDir, env: env(file) });
    expect(approved.code, approved.stderr).toBe(0);
    expect(await pending(stateDir)).toEqual([]);
    const init = await runCli(["init"], { stateDir: fresh, env: env(file) });
    expect(init.code, init.stderr).toBe(0);
  });

  it("any group or other bit is refused, read or write (0640, 0604, 0620, 0602, 0660, 0666); 0600 and 0400 are taken", async () => {
    for (const mode of [0o640, 0o604, 0o620, 0o602, 0o660, 0o666]) {
      const file = passFile(mode);
      const shown = mode.toString(8);
      const fresh = join(tempDir(), "state");
      expectSharedRefused(await runCli(["init"], { stateDir: fresh, env: env(file) }), shown, file, shown);
      expect(existsSync(fresh), shown).toBe(false);
    }
    for (const mode of [0o600, 0o400]) {
      const r = await runCli(["init"], { stateDir: join(tempDir(), "state"), env: env(passFile(mode)) });
      expect(r.code, `${mode.toString(8)}: ${r.stderr}`).toBe(0);
    }
  });

  it("a symbolic link is judged by the file it leads to: to a 0644 file refused (naming the link), to a 0600 file taken; a directory is refused", async () => {
    const dir = tempDir("portcullis-pass-link-");
    const link = join(dir, "link");
    symlinkSync(passFile(0o644), link);
    expectSharedRefused(
      await runCli(["init"], { stateDir: join(tempDir(), "state"), env: env(link) }),
      "link to 644",
      link,
      "644",
    );
    const own = join(dir, "own");
    symlinkSync(passFile(0o600), own);
    const taken = await runCli(["init"], { stateDir: join(tempDir(), "state"), env: env(own) });
    expect(taken.code, taken.stderr).toBe(0);
    const folder = join(dir, "folder");
    mkdirSync(folder, { mode: 0o700 });
    const r = await runCli(["init"], { stateDir: join(tempDir(), "state"), env: env(folder) });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis init: cannot read PORTCULLIS_PASSPHRASE_FILE (${folder}): it is a directory, not a file (EISDIR).\n`,
    );
  });

  it("a path holding terminal controls is shown escaped, in the sentence and in the chmod to paste", async () => {
    const file = passFile(0o644, "pass\u001b[2Jword");
    const r = await runCli(["init"], { stateDir: join(tempDir(), "state"), env: env(file) });
    const dir = file.slice(0, -"pass\u001b[2Jword".length);
    expect(r.stderr).not.toContain("\u001b");
    expectSharedRefused(r, "escaped", `${dir}pass\\u001b[2Jword`, "644", `$'${dir}pass\\x1b[2Jword'`);
  });

  it("a named pipe others may write (0622) is refused, though a writer feeds it the passphrase", async () => {
    const fifo = join(tempDir("portcullis-pass-fifo-"), "pipe");
    expect(spawnSync("mkfifo", ["-m", "622", fifo]).status).toBe(0);
    chmodSync(fifo, 0o622);
    const writer = spawn("sh", ["-c", 'printf "%s\\n" "$1" > "$2"', "sh", TEST_PASSPHRASE, fifo], {
      stdio: "ignore",
    });
    cleanup.push(() => void writer.kill());
    const r = await runCli(["init"], { stateDir: join(tempDir(), "state"), env: env(fifo) });
    expectSharedRefused(r, "fifo 622", fifo, "622");
  });
});

describe.skipIf(typeof process.getuid !== "function" || process.getuid() !== 0)(
  "PORTCULLIS_PASSPHRASE_FILE of another user",
  () => {
    it("is refused even at mode 0600: its owner may read or change it (root runs the command: the owner is checked, not access)", async () => {
      const file = passFile(0o600);
      chownSync(file, 65534, 65534);
      const fresh = join(tempDir(), "state");
      const r = await runCli(["init"], { stateDir: fresh, env: env(file) });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).not.toContain(TEST_PASSPHRASE);
      expect(r.stderr).toBe(
        `portcullis init: PORTCULLIS_PASSPHRASE_FILE (${file}): it belongs to another user (uid 65534; this is uid 0), who may read or change it (mode 600), and the passphrase in it opens the keyring (whoever reads it may approve in your name); put the passphrase in a file of your own, made yours alone with chmod 600 FILE, and set PORTCULLIS_PASSPHRASE_FILE to that file, then run the command again.\n`,
      );
      expect(existsSync(fresh)).toBe(false);
    });
  },
);
