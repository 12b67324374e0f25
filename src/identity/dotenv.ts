// `node --env-file=FILE`: the files node reads variables from before it starts, and their
// variables. Their NODE_OPTIONS is applied by node (preloads run inside the server) and their
// variables are the server's environment, so the identity digests the files, their preloads, and
// folds their variables into the environment digest.

import { setOwn } from "../util/setOwn.js";

/** An env file named on a node command line. */
export interface EnvFileArg {
  /** as written (relative to the working directory) */
  path: string;
  /** `--env-file-if-exists`, or named where node may not read it: a missing file is no error */
  optional: boolean;
}

const FLAG = "--env-file";
const IF_EXISTS = "--env-file-if-exists";

/**
 * The env files of a node argument list, read as node reads them: once an env-file option is
 * among node's own options, node collects every argument that is one (`--env-file X`,
 * `--env-file=X`, `--env-file-if-exists…`), wherever it stands, even after the script (node 20
 * reads them all; later versions stop at `--`). Those after `entryAt` or `--` are taken as
 * optional: digested when they exist, whichever node runs.
 */
export function envFilesOf(args: readonly string[], entryAt: number): EnvFileArg[] {
  const out: EnvFileArg[] = [];
  let afterDashDash = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") afterDashDash = true;
    if (!a.startsWith(FLAG)) continue;
    const eq = a.indexOf("=");
    const name = eq < 0 ? a : a.slice(0, eq);
    if (name !== FLAG && name !== IF_EXISTS) continue;
    const path = eq < 0 ? args[i + 1] : a.slice(eq + 1);
    if (path === undefined) break;
    out.push({ path, optional: name === IF_EXISTS || afterDashDash || i >= entryAt });
    if (eq < 0) i++;
  }
  return out;
}

const SPACE = " \t\n";

function trim(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && SPACE.includes(s[a]!)) a++;
  while (b > a && SPACE.includes(s[b - 1]!)) b--;
  return s.slice(a, b);
}

/** Text from `at` to the line's end, and where the next line starts (text.length: none). */
function restOfLine(text: string, at: number): { line: string; next: number } {
  const nl = text.indexOf("\n", at);
  return nl < 0 ? { line: text.slice(at), next: text.length } : { line: text.slice(at, nl), next: nl + 1 };
}

/**
 * The variables of an env file, parsed as node's dotenv parser does (node 20.12 and later):
 * `KEY=VALUE` lines, `export KEY=…`, `#` comments (whole lines, and after an unquoted value),
 * values in "…", '…' or `…` (possibly over several lines; `\n` expanded only within "…"), a later
 * line for the same key winning.
 */
export function parseEnvFile(text: string): Record<string, string> {
  const vars: Record<string, string> = {};
  let content = trim(text.replace(/\r/g, ""));
  while (content !== "") {
    if (content[0] === "\n" || content[0] === "#") {
      content = content.slice(restOfLine(content, 0).next);
      continue;
    }
    const m = /[=\n]/.exec(content);
    if (m === null) break;
    if (m[0] === "\n") {
      content = trim(content.slice(m.index + 1));
      continue;
    }
    let key = trim(content.slice(0, m.index));
    content = content.slice(m.index + 1);
    if (content === "" || content[0] === "\n") {
      if (key !== "") setOwn(vars, key, "");
      continue;
    }
    content = trim(content);
    if (key === "") continue;
    if (key.startsWith("export ")) key = trim(key.slice(7));
    if (content === "") {
      setOwn(vars, key, "");
      break;
    }
    const q = content[0]!;
    const quoted = q === '"' || q === "'" || q === "`";
    const close = quoted ? content.indexOf(q, 1) : -1;
    if (close > 0) {
      const inner = content.slice(1, close);
      setOwn(vars, key, q === '"' ? inner.replaceAll("\\n", "\n") : inner);
      content = content.slice(restOfLine(content, close + 1).next);
      continue;
    }
    const { line, next } = restOfLine(content, 0);
    // unclosed: the whole line, quote and `#` included, as node does
    if (quoted) setOwn(vars, key, line);
    else {
      const hash = line.indexOf("#");
      setOwn(vars, key, trim(hash < 0 ? line : line.slice(0, hash)));
    }
    content = trim(content.slice(next));
  }
  return vars;
}
