import { mkdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

/** The state directory does not exist, and the command only reads: nothing was created. */
export class StateDirMissingError extends Error {
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
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/**
 * The state directory of a command that only reads (`status`, `approvals`, `audit …`,
 * `catalog …`): it must exist already. Creating it would make the command report an empty,
 * healthy state ("nothing pending") for a directory no gateway uses; throws
 * StateDirMissingError naming it instead.
 */
export function existingStateDir(flag?: string): string {
  const dir = stateDirPath(flag);
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) throw new StateDirMissingError(dir);
  return dir;
}
