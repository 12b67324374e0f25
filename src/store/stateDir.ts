import { mkdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

/** The state directory cannot be used (not a directory, cannot be created): one sentence, exit 2. */
export class StateDirError extends Error {
  override name = "StateDirError";
}

/** The state directory does not exist, and the command only reads: nothing was created. */
export class StateDirMissingError extends StateDirError {
  override name = "StateDirMissingError";
  constructor(readonly dir: string) {
    super(
      `no state directory at ${dir}: nothing was created. A gateway started with another ` +
        "--state-dir or PORTCULLIS_HOME keeps its state elsewhere; give the same one here.",
    );
  }
}

/** Where the state lives: --state-dir, else $PORTCULLIS_HOME, else the XDG state directory. */
export function stateDirPath(flag?: string): string {
  return flag
    ? resolve(flag)
    : process.env.PORTCULLIS_HOME
      ? resolve(process.env.PORTCULLIS_HOME)
      : join(
          process.env.XDG_STATE_HOME
            ? resolve(process.env.XDG_STATE_HOME)
            : join(homedir(), ".local", "state"),
          "portcullis",
        );
}

/**
 * The state directory, created with mode 0700 if needed (it holds the keyring, the store and
 * the audit log). For the commands that write state: `run`, `init`, the demo.
 */
export function resolveStateDir(flag?: string): string {
  const dir = stateDirPath(flag);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new StateDirError(
      code === "EEXIST" || code === "ENOTDIR"
        ? `the state directory ${dir} is not a directory (a file is in its place or on its path).`
        : `the state directory ${dir} cannot be created (${code ?? String(e)}).`,
    );
  }
  notADirectory(dir);
  return dir;
}

/** Throws when `dir` exists but is not a directory. */
function notADirectory(dir: string): void {
  let isDir = true;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    // gone meanwhile: whoever uses it next says so
  }
  if (!isDir) throw new StateDirError(`the state directory ${dir} is not a directory.`);
}

/**
 * The state directory of a command that only reads (`status`, `approvals`, `audit …`,
 * `catalog …`): it must exist already. Creating it would make the command report an empty,
 * healthy state ("nothing pending") for a directory no gateway uses; throws
 * StateDirMissingError naming it instead.
 */
export function existingStateDir(flag?: string): string {
  const dir = stateDirPath(flag);
  let exists = false;
  try {
    statSync(dir);
    exists = true;
  } catch {
    exists = false;
  }
  if (!exists) throw new StateDirMissingError(dir);
  notADirectory(dir);
  return dir;
}
