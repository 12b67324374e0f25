// Temporary directories removed when the current test file ends (test/setup/perFile.ts calls
// removeFileDirs after each file): for helpers that make directories outside any test's own
// cleanup. A hook registered by a helper module itself would run for the first file only, as
// the module is loaded once per worker.
import { rmSync } from "node:fs";

const dirs: string[] = [];

export function removeAtFileEnd(dir: string): void {
  dirs.push(dir);
}

/** Removes them; one that cannot be removed (a test made it unreadable) is left, not an error. */
export function removeFileDirs(): void {
  for (const d of dirs.splice(0)) {
    try {
      rmSync(d, { recursive: true, force: true });
    } catch {
      // cleanup only: what the file checked was checked
    }
  }
}
