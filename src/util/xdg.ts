import { homedir, userInfo } from "node:os";
import { isAbsolute, join } from "node:path";

/** The XDG base directory variables portcullis reads. */
type XdgVariable = "XDG_STATE_HOME" | "XDG_CACHE_HOME" | "XDG_CONFIG_HOME";

/**
 * The variable's value when it is an absolute path, else undefined. The XDG Base Directory
 * specification has a relative value ignored ("All paths set in these environment variables must
 * be absolute"): taken relative to the working directory, `XDG_STATE_HOME=state` put the state
 * directory in a different place for each directory a command ran in, so a gateway a host started
 * in one folder and the `portcullis approve` typed in another used two state directories; and
 * `XDG_CONFIG_HOME=conf` had `wrap claude-desktop` read and rewrite `./conf/Claude/…` of whatever
 * folder it ran in, not the file Claude Desktop reads.
 */
export function xdgAbsolute(variable: XdgVariable): string | undefined {
  const value = process.env[variable];
  return value && isAbsolute(value) ? value : undefined;
}

/**
 * The home directory the defaults are under: `$HOME` when it is an absolute path, else the user's
 * entry in the password database (what node reads when HOME is unset). An empty or relative HOME
 * (`HOME= portcullis init`, a service manager's `HOME=.`) is passed over, as a relative XDG
 * variable is: taken as it is, it made the default state directory `.local/state/portcullis`
 * under whatever folder a command ran in, so a gateway started in one folder and the `approve`
 * typed in another used two stores. The one rule for every place that reads the user's home: the
 * state directory, the host files `wrap`, `doctor` and `drill` look for (onboard/hosts.ts), a
 * host's `${userHome}` (onboard/hostVariables.ts) and `~` in `identity.include` (identity/include.ts).
 */
export function homeDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const home = env.HOME;
  if (home !== undefined && isAbsolute(home)) return home;
  try {
    const own = userInfo().homedir;
    if (isAbsolute(own)) return own;
  } catch {
    // no entry for this uid: nothing better than what node makes of HOME
  }
  return homedir();
}

/** An XDG base directory: the variable's value when it is an absolute path (xdgAbsolute), else the default under the home directory. */
export function xdgBase(variable: XdgVariable, ...fallback: string[]): string {
  return xdgAbsolute(variable) ?? join(homeDirectory(), ...fallback);
}

/** `$XDG_STATE_HOME`, else `~/.local/state`. */
export function xdgStateHome(): string {
  return xdgBase("XDG_STATE_HOME", ".local", "state");
}
