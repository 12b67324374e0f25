import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";

/**
 * An XDG base directory: the variable's value when it is an absolute path, else the default
 * under the home directory. The XDG Base Directory specification has a relative value ignored
 * ("All paths set in these environment variables must be absolute"): taken relative to the
 * working directory, `XDG_STATE_HOME=state` put the state directory in a different place for each
 * directory a command ran in, so a gateway a host started in one folder and the `portcullis
 * approve` typed in another used two state directories.
 */
export function xdgBase(variable: "XDG_STATE_HOME" | "XDG_CACHE_HOME", ...fallback: string[]): string {
  const value = process.env[variable];
  return value && isAbsolute(value) ? value : join(homedir(), ...fallback);
}

/** `$XDG_STATE_HOME`, else `~/.local/state`. */
export function xdgStateHome(): string {
  return xdgBase("XDG_STATE_HOME", ".local", "state");
}
