// A small file the user names is read only when it is of its kind: portcullis.json and the
// listen token file (their own tests) must be regular files; PORTCULLIS_PASSPHRASE_FILE and
// `audit verify --checkpoint` may be pipes too (`<(pass show …)`, `<(ssh … cat …)`), read to
// their end, but never more than their kind's size; a device is refused everywhere (/dev/zero
// would be read until memory ran out). Real CLI processes; the device here is /dev/null, which
// ends at once whatever the code does.
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

function fifo(): string {
  const path = join(tempDir("portcullis-fifo-"), "named");
  expect(spawnSync("mkfifo", ["-m", "600", path]).status).toBe(0);
  return path;
}

const NOT_FILE_OR_PIPE = "it is a device or a socket, not a file or a pipe.";

/** `path` (a FIFO) fed `text` by another process, as `<(…)` feeds one; ends once read. */
function feed(path: string, text: string): () => void {
  const file = join(tempDir("portcullis-fed-"), "text");
  writeFileSync(file, text);
  const writer = spawn("sh", ["-c", 'cat "$1" > "$2"', "sh", file, path], { stdio: "ignore" });
  return () => writer.kill();
}

describe("PORTCULLIS_PASSPHRASE_FILE", () => {
  it("naming a device is refused at once by unlock and init, exit 2, naming the variable", async () => {
    const file = "/dev/null";
    const env = { ...passphraseEnv(), PORTCULLIS_PASSPHRASE_FILE: file };
    const unlock = await runCli(["unlock", "--for", "1m"], {
      stateDir: newStateDir(),
      env,
      timeoutMs: 15_000,
    });
    expect(unlock.code, unlock.stderr).toBe(2);
    expect(unlock.stderr).toBe(
      `portcullis unlock: PORTCULLIS_PASSPHRASE_FILE (${file}): ${NOT_FILE_OR_PIPE}\n`,
    );
    const init = await runCli(["init"], { stateDir: tempDir("portcullis-init-"), env, timeoutMs: 15_000 });
    expect(init.code, init.stderr).toBe(2);
    expect(init.stderr).toBe(`portcullis init: PORTCULLIS_PASSPHRASE_FILE (${file}): ${NOT_FILE_OR_PIPE}\n`);
  });

  it("naming a pipe (as <(pass show …) gives) is read: init takes its passphrase; a pipe of more than 64 KiB is refused", async () => {
    const env = { ...passphraseEnv() };
    const pipe = fifo();
    const stop = feed(pipe, `${TEST_PASSPHRASE}\n`);
    const init = await runCli(["init"], {
      stateDir: tempDir("portcullis-init-"),
      env: { ...env, PORTCULLIS_PASSPHRASE_FILE: pipe },
      timeoutMs: 30_000,
    });
    stop();
    expect(init.code, init.stderr).toBe(0);
    const big = fifo();
    const stopBig = feed(big, "x".repeat(70_000));
    const refused = await runCli(["init"], {
      stateDir: tempDir("portcullis-init-"),
      env: { ...env, PORTCULLIS_PASSPHRASE_FILE: big },
      timeoutMs: 15_000,
    });
    stopBig();
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(
      `PORTCULLIS_PASSPHRASE_FILE (${big}): it is 65537 bytes, far more than a passphrase file`,
    );
  });
});

describe("audit verify", () => {
  it("--checkpoint naming a device is refused at once, exit 2, naming the flag; a pipe is read", async () => {
    const stateDir = newStateDir();
    const r = await runCli(["audit", "verify", "--checkpoint", "/dev/null"], { stateDir, timeoutMs: 15_000 });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(`portcullis audit verify: --checkpoint /dev/null: ${NOT_FILE_OR_PIPE}\n`);
    // a checkpoint fetched through a pipe (`--checkpoint <(ssh host cat checkpoint.json)`)
    const cp = await runCli(["audit", "checkpoint"], { stateDir });
    expect(cp.code, cp.stderr).toBe(0);
    const pipe = fifo();
    const stop = feed(pipe, cp.stdout);
    const piped = await runCli(["audit", "verify", "--checkpoint", pipe], { stateDir, timeoutMs: 15_000 });
    stop();
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toMatch(/matches the checkpoint/);
  });

  it("--file naming a device is refused (a FIFO is still read: --file <(...))", async () => {
    const stateDir = newStateDir();
    const r = await runCli(["audit", "verify", "--file", "/dev/null"], { stateDir, timeoutMs: 15_000 });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      "portcullis audit verify: --file /dev/null: it is a device, not an export (a regular file or a FIFO is).\n",
    );
    // a FIFO (as --file <(...) gives) is still read to its end
    const exported = await runCli(["audit", "export"], { stateDir });
    expect(exported.code, exported.stderr).toBe(0);
    const exportFile = join(tempDir("portcullis-export-"), "export.jsonl");
    writeFileSync(exportFile, exported.stdout);
    const pipe = fifo();
    const writer = spawn("sh", ["-c", 'cat "$1" > "$2"', "sh", exportFile, pipe], { stdio: "ignore" });
    const piped = await runCli(["audit", "verify", "--file", pipe], { stateDir, timeoutMs: 15_000 });
    writer.kill();
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toMatch(/^audit chain ok: /);
  });
});
