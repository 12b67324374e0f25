import { chmodSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { KEYRING_FILE } from "../keyring/file.js";
import { closedDirectory, fileProblem } from "../util/errno.js";
import { shellWord } from "../util/shellWord.js";
import { homeDirectory, xdgStateHome } from "../util/xdg.js";

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
        "--state-dir or PORTCULLIS_HOME keeps its state elsewhere; give the same one here. " +
        // a first command before any `init` (`portcullis status` to see what is there) lands here
        // the command last, in no quotes of the sentence's own: it pastes whole (stateDirFlagFor)
        `To set up this one, run: portcullis init${stateDirFlagFor(dir)}`,
    );
  }
}

/** Why an empty --state-dir is refused (also read by doctor, for a host entry that gives one). */
export const EMPTY_STATE_DIR =
  "--state-dir is empty; give a directory, or leave the flag out for the default.";

/** Where the state lives: --state-dir, else $PORTCULLIS_HOME, else the XDG state directory. */
export function stateDirPath(flag?: string): string {
  // `--state-dir "$DIR"` with DIR unset: taken as absent, init and run would make and use the
  // default state directory (the user's real one) where another was meant.
  if (flag === "") throw new StateDirError(EMPTY_STATE_DIR);
  const given = flag || process.env.PORTCULLIS_HOME;
  if (given) refuseUnexpandedTilde(given, flag ? "--state-dir" : "PORTCULLIS_HOME");
  return given ? resolve(given) : join(xdgStateHome(), "portcullis");
}

/**
 * A `~` no shell expanded: bash leaves `--state-dir=~/x` as it is, and so does a host's JSON
 * `args` or a quoted `PORTCULLIS_HOME="~/x"`. Resolved, it made and used `./~/x` in whatever
 * directory the command ran from (a host's, for a gateway), a state directory nobody meant.
 * Refused, naming where it came from and the full path to write instead.
 */
function refuseUnexpandedTilde(given: string, from: "--state-dir" | "PORTCULLIS_HOME"): void {
  if (given !== "~" && !given.startsWith("~/")) return;
  const meant = shellWord(join(homeDirectory(), given.slice(1)));
  const why =
    from === "--state-dir"
      ? `bash leaves "--state-dir=~/…" as it is, and a host file's args are never expanded`
      : `a quoted "~/…" is not expanded, nor is a host file's env`;
  throw new StateDirError(
    `${from} starts with "~", which nothing expanded (${why}): it would name a directory "~" inside the current one; write the full path: ${from === "--state-dir" ? `--state-dir ${meant}` : `PORTCULLIS_HOME=${meant}`}.`,
  );
}

/**
 * The state directory a hint printed before the command opened its own (a usage error about an
 * ID, say) should name: the one `flag` gives, as stateDirPath reads it; undefined when that is
 * itself refused (an empty --state-dir), which the hint then leaves to the default.
 */
export function hintStateDir(flag?: string): string | undefined {
  try {
    return stateDirPath(flag);
  } catch {
    return undefined;
  }
}

/**
 * What to add to a `portcullis` command line printed for a human to copy (`portcullis approve ID`)
 * so that it reaches `dir`: nothing for the default state directory, else ` --state-dir DIR`. A
 * gateway's state directory often comes from a flag its host was given (`wrap` writes one into
 * every entry) or from a variable of the host's environment that the human's terminal lacks: a
 * bare command there looks in the default directory and finds nothing.
 *
 * The default left unnamed is `~/.local/state/portcullis`, the one a shell reaches with no
 * variable set, and only while this process's own default is that one too. `$XDG_STATE_HOME` is
 * such a variable, as `$PORTCULLIS_HOME` is: with it set, its directory was taken for the default
 * and left out, and the command pasted into a shell without it reached another store (another
 * vault, another record of the wrapped files); with it set while `dir` is the home's, a bare
 * command pasted back into this shell would reach `$XDG_STATE_HOME`'s.
 */
export function stateDirFlagFor(dir: string): string {
  const bare = join(homeDirectory(), ".local", "state", "portcullis");
  if (resolve(dir) === bare && join(xdgStateHome(), "portcullis") === bare) return "";
  // quoted for a POSIX shell when it holds anything a shell would act on; a control character
  // escaped, never printed raw (src/util/shellWord.ts)
  return ` --state-dir ${shellWord(dir)}`;
}

/**
 * A `portcullis` command for a human to copy, quoted as a sentence quotes it, with the state
 * directory when it is not the default (stateDirFlagFor): `'portcullis unlock --state-dir DIR'`.
 * In double quotes when the line holds a single quote of its own (a directory that needed
 * quoting), so that what is between the quotes pastes as it is.
 */
export function quotedCommand(args: string, stateDir: string | undefined): string {
  return quotedLine(`portcullis ${args}${stateDir === undefined ? "" : stateDirFlagFor(stateDir)}`);
}

/** A command line quoted as quotedCommand quotes one (double quotes when it holds a single quote). */
export function quotedLine(line: string): string {
  return line.includes("'") ? `"${line}"` : `'${line}'`;
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
        ? `${namedStateDir(dir, flag)} is not a directory (a file is in its place or on its path): ${NOT_A_DIRECTORY_FIX}.`
        : `${namedStateDir(dir, flag)} cannot be created: ${fileProblem(code)}.`,
    );
  }
  notADirectory(dir, flag);
  return dir;
}

const NOT_A_DIRECTORY_FIX =
  "move that file aside, or give the state directory in use with --state-dir or PORTCULLIS_HOME";

/**
 * A state directory as a sentence about it names it: its path and where the path came from
 * (`the state directory /x (given with --state-dir)`), so that the user knows which setting to
 * change. Every refusal of a state directory words it so.
 */
export function namedStateDir(dir: string, flag: string | undefined): string {
  return `the state directory ${dir} (${whereFrom(flag)})`;
}

/**
 * The refusal of `--state-dir` by a command that runs in a throwaway state directory of its own
 * (`drill`, `demo`): it would neither read nor write the one given, and taking the flag in silence
 * would let the user believe it had. Said by the flag's name, with the directory named as other
 * commands name it (namedStateDir) and what to do; exit 2 (UsageError), before anything is asked.
 */
export function throwawayStateDirRefusal(command: string, flag: string): string {
  const never = flag === "" ? "" : `, and never reads or writes ${namedStateDir(resolve(flag), flag)}`;
  return `${command}: --state-dir is not taken: the ${command} runs in a throwaway state directory it makes for itself${never}. Leave --state-dir out: your gateways' state is neither needed nor touched.`;
}

/**
 * Where the state directory's path came from, for a sentence that says it is unusable. Asked of
 * the command line itself: a command that makes its own directory (init) is handed the path
 * already resolved, from the flag or from PORTCULLIS_HOME alike.
 */
function whereFrom(flag: string | undefined): string {
  const given = process.argv.some((a) => a === "--state-dir" || a.startsWith("--state-dir="));
  if (flag && given) return "given with --state-dir";
  return process.env.PORTCULLIS_HOME
    ? "from PORTCULLIS_HOME"
    : flag
      ? "given with --state-dir"
      : "the default";
}

/** Throws when `dir` exists but is not a directory. */
function notADirectory(dir: string, flag: string | undefined): void {
  let isDir = true;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    // gone meanwhile: whoever uses it next says so
  }
  if (!isDir)
    throw new StateDirError(`${namedStateDir(dir, flag)} is not a directory: ${NOT_A_DIRECTORY_FIX}.`);
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
  } catch (e) {
    // one that cannot be reached (a parent this user may not enter) is no missing directory
    unreachable(dir, e);
    exists = false;
  }
  if (!exists) throw new StateDirMissingError(dir);
  notADirectory(dir, flag);
  return dir;
}

/**
 * The state directory exists but `init` was never run in it (no keyring, no store): a directory
 * made by `wrap`, or by hand, or not the one a gateway uses. A command that only reads refuses it
 * rather than create an empty store and report an empty, healthy state there ("audit chain ok:
 * the log is empty", "no gateway is running").
 */
export class NotInitializedError extends StateDirError {
  override name = "NotInitializedError";
  constructor(readonly dir: string) {
    super(
      `the state directory ${dir} has no keyring and no store (${STORE_FILE}): nothing was created. ` +
        "A gateway started with another --state-dir or PORTCULLIS_HOME keeps its state elsewhere; give the same one here. " +
        // the command last, in no quotes of the sentence's own: it pastes whole (stateDirFlagFor)
        `To set up this one, run: portcullis init${stateDirFlagFor(dir)}`,
    );
  }
}

/**
 * For the commands that only read the store (`status`, `approvals`, `audit …`, `catalog …`,
 * `egress`, `passkey list|rm`): throws NotInitializedError, before SQLite would create a store,
 * when the state directory holds neither a store nor a keyring. A keyring without a store (an
 * `init` of an earlier portcullis, which made the store at the first gateway) is a directory set
 * up: its store is opened, and made, as a gateway would.
 */
export function requireInitialized(dir: string): void {
  if (!present(dir, STORE_FILE) && !present(dir, KEYRING_FILE)) throw new NotInitializedError(dir);
}

/**
 * Whether `name` is in the state directory `dir`. A directory this user may not read (another
 * user's, mode 0700) is not one without files: existsSync said false there, and every reading
 * command told the user to run `portcullis init` in another user's state directory.
 */
function present(dir: string, name: string): boolean {
  try {
    statSync(join(dir, name));
    return true;
  } catch (e) {
    unreachable(dir, e);
    return false;
  }
}

/** Throws a StateDirError naming `dir` unless `e` (from a stat in it) says only that a file is absent. */
function unreachable(dir: string, e: unknown): void {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "ENOENT" || code === "ENOTDIR") return;
  // Below a directory this user may not enter, that directory is the one to name: the state
  // directory's own mode may be fine, and its owner may not be the one to ask.
  const closed = code === "EACCES" || code === "EPERM" ? closedDirectory(join(dir, KEYRING_FILE)) : null;
  if (closed && closed.dir !== resolve(dir))
    throw new StateDirError(
      `the state directory ${dir} cannot be read: this user may not enter the directory ${closed.dir} on its way (mode ${closed.mode}: no search permission for it) (${code}). Run the command as the user that directory belongs to, or give a state directory of your own (--state-dir or PORTCULLIS_HOME).`,
    );
  throw new StateDirError(
    `the state directory ${dir} cannot be read: ${fileProblem(code)}. Run the command as the user the directory belongs to, or give a state directory of your own (--state-dir or PORTCULLIS_HOME).`,
  );
}

/**
 * For `init`: a state directory that exists already but others may read (one made with `mkdir`
 * under the usual umask, mode 755) is made 0700, as portcullis creates its own, when it is empty:
 * then nothing but portcullis's files will be in it. One that holds other files keeps its mode,
 * and init stops with a sentence saying how to fix it: changing the mode of a directory of the
 * user's own (a home directory given as --state-dir) is not init's to decide. Returns the old
 * mode when it tightened one, else null.
 */
export function privateForInit(dir: string): string | null {
  let mode: number;
  try {
    const st = statSync(dir);
    if (!st.isDirectory()) return null; // resolveStateDir says so
    mode = st.mode & 0o777;
  } catch {
    return null; // created 0700 by resolveStateDir
  }
  if ((mode & 0o077) === 0) return null;
  const was = mode.toString(8).padStart(3, "0");
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch {
    /* unreadable: the store's opening says so */
  }
  if (entries.length > 0)
    throw new StateDirError(
      `the state directory ${dir} already holds other files and others may read it (mode ${was}); nothing was created. Give a new directory with --state-dir or PORTCULLIS_HOME, or first run: chmod 700 ${shellWord(dir)}`,
    );
  try {
    chmodSync(dir, 0o700);
  } catch (e) {
    throw new StateDirError(
      `the state directory ${dir} may be read by others (mode ${was}) and its mode cannot be changed: ${fileProblem((e as NodeJS.ErrnoException).code)}; nothing was created: give a directory of your own with --state-dir or PORTCULLIS_HOME.`,
    );
  }
  return was;
}

/** The store: this file in the state directory (src/store/db.ts). */
export const STORE_FILE = "portcullis.db";
