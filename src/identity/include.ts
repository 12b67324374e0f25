// Identity inputs given by the user (`identity.include` in portcullis.json, `--watch` on the
// command line): globs relative to the server's working directory, absolute paths, or `~/…`.
// A pattern that can never match is refused at start: a watched path that silently watches
// nothing lets a plugin change inside one epoch. One that matches nothing yet is accepted, and
// the capture warns of it (includeMatch.ts), naming where it was given.
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

export const GLOB_CHARS = /[*?[\]{}()!+@]/;

/**
 * Where each accepted pattern was given (the config key and file, or the flag), by working
 * directory and pattern: the capture that finds a pattern matching nothing names it there.
 */
const sources = new Map<string, string>();

export function includeSource(cwd: string, pattern: string): string | undefined {
  return sources.get(`${resolve(cwd)}\0${pattern}`);
}

export class IncludeError extends Error {
  override name = "IncludeError";
}

/** `~` and `~/x` become the home directory; anything else is returned as it is. */
function expandHome(pattern: string): string {
  if (pattern === "~") return homedir();
  if (pattern.startsWith("~/")) return join(homedir(), pattern.slice(2));
  return pattern;
}

/** Brackets and braces that open and close in order; a glob that does not is malformed. */
function balanced(pattern: string): boolean {
  const stack: string[] = [];
  const pairs: Record<string, string> = { "]": "[", "}": "{", ")": "(" };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      i++;
      continue;
    }
    if (c === "[" || c === "{" || c === "(") stack.push(c);
    else if (c in pairs) {
      if (stack.pop() !== pairs[c]) return false;
    }
  }
  return stack.length === 0;
}

/**
 * The patterns with `~` expanded, each checked: refused (IncludeError naming `where`, the flag or
 * config key, and the pattern) when empty, malformed, or a plain path that does not exist.
 * Relative patterns stay relative to `cwd`; absolute ones stay absolute and are watched there.
 */
export function checkIncludes(patterns: readonly string[], cwd: string, where: string): string[] {
  return patterns.map((given) => {
    const p = expandHome(given.trim());
    const bad = (why: string) => new IncludeError(`${where}: ${JSON.stringify(given)} ${why}`);
    if (p === "" || p === "!") throw bad("is empty; give a path or a glob such as dist/**");
    if (p.includes("\0")) throw bad("contains a NUL byte");
    if (given.startsWith("~") && !given.startsWith("~/") && given !== "~") {
      throw bad("names another user's home directory (~user); give an absolute path");
    }
    const body = p.startsWith("!") ? p.slice(1) : p;
    if (!balanced(body)) throw bad("is not a valid glob (an unclosed [, { or ( )");
    if (!GLOB_CHARS.test(body) && !p.startsWith("!")) {
      const abs = isAbsolute(body) ? body : join(cwd, body);
      if (!existsSync(abs)) throw bad(`can never match: ${abs} does not exist (and it has no glob)`);
    }
    const key = `${resolve(cwd)}\0${p}`;
    if (!sources.has(key)) sources.set(key, where);
    return p;
  });
}
