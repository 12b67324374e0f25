// Read-only file probes the resolver relies on: PATH lookup, upward search, script heads and
// text, package.json. Nothing here executes anything. Also the error for code that cannot be read.
import {
  accessSync,
  closeSync,
  constants,
  openSync,
  readFileSync,
  readSync,
  realpathSync,
  statSync,
} from "node:fs";
import { basename, delimiter, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";

const SCRIPT_TEXT_LIMIT = 256 * 1024;

/** Thrown for a launch whose code cannot be read; the message is one sentence naming the path. */
export class IdentityError extends Error {
  override name = "IdentityError";
}

function describe(code: string | undefined): string {
  switch (code) {
    case "ENOENT":
    case "ENOTDIR":
      return "it does not exist";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EISDIR":
      return "it is a directory";
    default:
      return code ?? "unknown error";
  }
}

export function unreadable(what: string, abs: string, cwd: string, code: string | undefined): IdentityError {
  // From the root (a host that starts servers from `/`) a relative path would read as one
  // relative to wherever the user looks from: the absolute path says where it was looked for.
  const shown = dirname(cwd) === cwd ? abs : displayPath(abs, cwd);
  return new IdentityError(`cannot read the ${what} ${shown} (${describe(code)}).`);
}

/** Relative to cwd when inside it, else absolute. */
export function displayPath(abs: string, cwd: string): string {
  const rel = relative(cwd, abs);
  if (rel === "") return ".";
  if (rel.startsWith(`..${sep}`) || rel === ".." || isAbsolute(rel)) return abs;
  return sep === "/" ? rel : rel.split(sep).join("/");
}

export function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

export function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function canExec(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function realpathOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** The command as a spawn with this PATH would find it (absolute, not realpath'd). */
export function which(cmd: string, cwd: string, pathEnv: string, executableOnly = true): string | null {
  if (cmd === "") return null;
  if (cmd.includes("/") || (sep === "\\" && cmd.includes("\\"))) {
    const p = resolve(cwd, cmd);
    return isFile(p) && (!executableOnly || canExec(p)) ? p : null;
  }
  for (const d of pathEnv.split(delimiter)) {
    const p = resolve(cwd, d === "" ? "." : d, cmd);
    if (isFile(p) && canExec(p)) return p;
  }
  return null;
}

/** First directory upward from `start` (inclusive) that holds one of `names`; returns the file. */
export function findUp(start: string, names: readonly string[]): string | null {
  let dir = start;
  for (;;) {
    for (const n of names) {
      const p = join(dir, n);
      if (isFile(p)) return p;
    }
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

function readHead(p: string, n: number): string {
  let fd: number;
  try {
    fd = openSync(p, "r");
  } catch {
    return "";
  }
  try {
    const buf = Buffer.alloc(n);
    const got = readSync(fd, buf, 0, n, 0);
    return buf.toString("utf8", 0, got);
  } catch {
    return "";
  } finally {
    closeSync(fd);
  }
}

/** The interpreter command line of a `#!` script, or null for anything else. */
export function shebangOf(p: string): string[] | null {
  const head = readHead(p, 512);
  if (!head.startsWith("#!")) return null;
  const nl = head.indexOf("\n");
  const words = head
    .slice(2, nl < 0 ? head.length : nl)
    .trim()
    .split(/\s+/)
    .filter((w) => w !== "");
  if (words.length === 0) return null;
  if (basename(words[0]!) === "env") return [words[0]!, ...words.slice(1).filter((w) => w !== "-S")];
  return words;
}

export function isScript(p: string | null): p is string {
  return p !== null && readHead(p, 2) === "#!";
}

export function readText(p: string): string | null {
  try {
    const buf = readFileSync(p);
    if (buf.length > SCRIPT_TEXT_LIMIT || buf.includes(0)) return null;
    return buf.toString("utf8");
  } catch {
    return null;
  }
}

export function readJson(p: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(readFileSync(p, "utf8"));
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}
