import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

/**
 * The state directory: --state-dir, else $PORTCULLIS_HOME, else the XDG state
 * directory. Created with mode 0700 because it holds the keyring and the audit log.
 */
export function resolveStateDir(flag?: string): string {
  const dir = flag
    ? resolve(flag)
    : process.env.PORTCULLIS_HOME
      ? resolve(process.env.PORTCULLIS_HOME)
      : join(
          process.env.XDG_STATE_HOME
            ? resolve(process.env.XDG_STATE_HOME)
            : join(homedir(), ".local", "state"),
          "portcullis",
        );
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}
