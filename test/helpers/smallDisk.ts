// A small file system for the tests of a full disk: a 4 MiB tmpfs mounted for the test (root
// only; where mount is refused, as in an unprivileged CI container, the caller skips and says
// why: filling the real disk is not an option), holding a state directory made as newStateDir()
// makes one, and a file that fills it.
import { spawnSync } from "node:child_process";
import { closeSync, copyFileSync, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./files.js";
import { newStateDir } from "./state.js";

export interface SmallDisk {
  /** the state directory, on the small file system: the test's keyring and store */
  stateDir: string;
  /** writes a file until the file system has no byte left */
  fill(): void;
  /** removes that file */
  free(): void;
}

/**
 * A 4 MiB tmpfs holding a state directory, or why none could be mounted (the test skips); its
 * unmount is pushed on `cleanup`.
 */
export function smallDisk(cleanup: (() => Promise<void> | void)[]): SmallDisk | string {
  const mnt = tempDir("portcullis-small-disk-");
  const m = spawnSync("mount", ["-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", mnt], {
    encoding: "utf8",
  });
  if (m.status !== 0)
    return `a small file system cannot be mounted here (mount -t tmpfs: ${(m.stderr || m.error?.message || "").trim()}): filling the real disk is not an option`;
  cleanup.push(() => {
    spawnSync("umount", ["-l", mnt]);
  });
  const stateDir = join(mnt, "state");
  mkdirSync(stateDir, { mode: 0o700 });
  const made = newStateDir();
  for (const f of ["keyring.json", "portcullis.db"]) copyFileSync(join(made, f), join(stateDir, f));
  const filler = join(mnt, "filler");
  return {
    stateDir,
    fill() {
      const fd = openSync(filler, "w");
      try {
        for (const size of [1 << 16, 4096, 512, 1]) {
          const chunk = Buffer.alloc(size, 1);
          try {
            for (;;) writeSync(fd, chunk);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== "ENOSPC") throw e;
          }
        }
      } finally {
        closeSync(fd);
      }
    },
    free() {
      rmSync(filler, { force: true });
    },
  };
}
