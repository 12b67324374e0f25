// A small file the user names (PORTCULLIS_PASSPHRASE_FILE, audit verify --checkpoint) is read only
// when it is a regular file of its kind's size: a FIFO is refused at once, not waited on, and a
// device is not read (/dev/zero would be read until memory ran out). Real CLI processes; the
// device here is /dev/null, which ends at once whatever the code does.
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

function fifo(): string {
  const path = join(tempDir("portcullis-fifo-"), "named");
  expect(spawnSync("mkfifo", [path]).status).toBe(0);
  return path;
}

const NOT_REGULAR = "it is not a regular file (a FIFO, socket or device).";

describe("PORTCULLIS_PASSPHRASE_FILE", () => {
  it("naming a FIFO or a device is refused at once by unlock and init, exit 2, naming the variable", async () => {
    for (const file of [fifo(), "/dev/null"]) {
      const env = { ...passphraseEnv(), PORTCULLIS_PASSPHRASE_FILE: file };
      const unlock = await runCli(["unlock", "--for", "1m"], {
        stateDir: newStateDir(),
        env,
        timeoutMs: 15_000,
      });
      expect(unlock.code, unlock.stderr).toBe(2);
      expect(unlock.stderr).toBe(`portcullis unlock: PORTCULLIS_PASSPHRASE_FILE (${file}): ${NOT_REGULAR}\n`);
      const init = await runCli(["init"], { stateDir: tempDir("portcullis-init-"), env, timeoutMs: 15_000 });
      expect(init.code, init.stderr).toBe(2);
      expect(init.stderr).toBe(`portcullis init: PORTCULLIS_PASSPHRASE_FILE (${file}): ${NOT_REGULAR}\n`);
    }
  });
});

describe("audit verify", () => {
  it("--checkpoint naming a FIFO or a device is refused at once, exit 2, naming the flag", async () => {
    const stateDir = newStateDir();
    for (const file of [fifo(), "/dev/null"]) {
      const r = await runCli(["audit", "verify", "--checkpoint", file], { stateDir, timeoutMs: 15_000 });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe(`portcullis audit: --checkpoint ${file}: ${NOT_REGULAR}\n`);
    }
  });

  it("--file naming a device is refused (a FIFO is still read: --file <(...))", async () => {
    const stateDir = newStateDir();
    const r = await runCli(["audit", "verify", "--file", "/dev/null"], { stateDir, timeoutMs: 15_000 });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      "portcullis audit: --file /dev/null: it is a device, not an export (a regular file or a FIFO is).\n",
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
