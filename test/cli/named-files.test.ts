// A small file the user names (PORTCULLIS_PASSPHRASE_FILE, audit verify --checkpoint) is read only
// when it is a regular file of its kind's size: a FIFO is refused at once, not waited on, and a
// device is not read (/dev/zero would be read until memory ran out). Real CLI processes; the
// device here is /dev/null, which ends at once whatever the code does.
import { spawnSync } from "node:child_process";
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
