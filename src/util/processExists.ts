/**
 * Whether a process with this pid exists now (signal 0: nothing is sent). EPERM means it exists
 * as another user's. A pid reused since by another process reads as existing: callers that
 * clean up after a dead process leave its files alone then, the safe side, unless something else
 * says the file is nobody's (the keyring's temporary files: their age and its rewrite lock,
 * src/keyring/leftTemps.ts leftKeyringTemps).
 */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
