// A pipe given as PORTCULLIS_PASSPHRASE_FILE (`<(pass show portcullis)`, README) is taken on
// every system portcullis runs on. The refusal reads the opened file's status (fstat): Linux
// reports a pipe as 0600 and its maker's, but macOS reports every pipe as 0660, with no link and
// on device 0 (XNU, bsd/kern/sys_pipe.c, pipe_stat), whoever may use it. Those bits give nobody
// anything (a pipe has no name another user could open), so a mode check of them refused the
// README's own example on a Mac: "other users may read or change it (mode 660)", with a
// `chmod 600 /dev/fd/63` that cannot help. macOS cannot run here, so its status is given as its
// kernel writes it; a named FIFO of the same mode (a real one, mkfifo) is still refused, and a
// pipe through a real CLI process on this machine is still taken.
import { spawnSync } from "node:child_process";
import { constants, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { passphraseFileRefusal } from "../../src/cli/passphraseFile.js";
import { tempDir } from "../helpers/files.js";
import { CLI } from "../helpers/paths.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

const own = process.getuid?.() ?? 0;
/** An unnamed pipe's status as macOS's pipe_stat writes it: 0660, no link, device 0, the caller's uid. */
const macPipe = { mode: constants.S_IFIFO | 0o660, uid: own, nlink: 0, dev: 0 };

describe.skipIf(process.platform === "win32")("a pipe as the passphrase file", () => {
  it("a pipe as macOS reports it (0660, no link, device 0) is taken; another user's is not", () => {
    expect(passphraseFileRefusal("/dev/fd/63", macPipe)).toBeNull();
    expect(passphraseFileRefusal("/dev/fd/63", { ...macPipe, uid: own + 1 })?.kind).toBe("owner");
  });

  it("a FIFO in a directory, or on a device, is judged by its mode: a real mkfifo 0660 is refused", () => {
    const fifo = join(tempDir("portcullis-pass-fifo660-"), "pipe");
    expect(spawnSync("mkfifo", ["-m", "660", fifo]).status).toBe(0);
    const st = statSync(fifo);
    expect(passphraseFileRefusal(fifo, st)?.kind).toBe("mode");
    // unlinked after it was opened, it is still on its file system's device
    expect(passphraseFileRefusal(fifo, { ...macPipe, dev: st.dev })?.kind).toBe("mode");
    // a regular file with no link (deleted while open) is a file: its mode counts
    expect(passphraseFileRefusal("f", { ...macPipe, mode: constants.S_IFREG | 0o660 })?.kind).toBe("mode");
  });

  it("a pipe on this machine, through a real CLI process, is taken (audit verify opens the keyring)", () => {
    const stateDir = newStateDir();
    const argv = [process.execPath, CLI, "audit", "verify", "--state-dir", stateDir];
    const r = spawnSync(
      "bash",
      ["-c", 'PORTCULLIS_PASSPHRASE_FILE=<(printf "%s\\n" "$PASS") "$@"', "bash", ...argv],
      {
        encoding: "utf8",
        env: { ...process.env, PASS: TEST_PASSPHRASE, PORTCULLIS_INSECURE_TEST_KDF: "1" },
        timeout: 20_000,
      },
    );
    expect(r.stderr).not.toMatch(/PORTCULLIS_PASSPHRASE_FILE/);
    expect(r.status, r.stderr).toBe(0);
  });
});
