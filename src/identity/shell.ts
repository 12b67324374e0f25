// Shell text: wrapper scripts, package.json scripts, `sh -c` strings. The text is read, never
// run, for the command that starts the server.
import { dirname, resolve } from "node:path";
import { type Ctx, empty, type Found, MAX_DEPTH, merge, UNKNOWN } from "./context.js";
import { CODE_EXT_RE, findScript } from "./entry.js";
import { isDir, readText, realpathOr } from "./files.js";
import { splitCommands } from "./shellWords.js";

/** Stands in a word for the directory of the script being read (`$(dirname "$0")` and kin). */
const SCRIPT_DIR = "\u0001";

export function scanScript(script: string, ctx: Ctx): Found {
  const real = realpathOr(script);
  if (ctx.seen.has(real)) return empty();
  ctx.seen.add(real);
  const text = readText(script);
  if (text === null) return empty();
  return scanShellText(text, { ...ctx, scriptDir: dirname(script) }, script);
}

const ZERO = String.raw`(?:\$0|\$\{0\}|\$\{BASH_SOURCE(?:\[0\])?\}|\$BASH_SOURCE)`;
const DIRNAME_RE = new RegExp(
  String.raw`\$\(\s*dirname\s+(?:--\s+)?"?(?:${ZERO}|\$\(\s*(?:realpath|readlink\s+-f)\s+(?:--\s+)?"?${ZERO}"?\s*\))"?\s*\)`,
  "g",
);
const CD_PWD_RE = new RegExp(
  String.raw`\$\(\s*cd\s+(?:-P\s+)?(?:--\s+)?"?${SCRIPT_DIR}"?\s*(?:[&>/a-z0-9\s]*?)&&\s*pwd(?:\s+-P)?\s*\)`,
  "g",
);
const REALPATH_DIR_RE = new RegExp(
  String.raw`\$\(\s*(?:realpath|readlink\s+-f)\s+"?${SCRIPT_DIR}"?\s*\)`,
  "g",
);
const KEYWORDS = new Set([
  "exec",
  "then",
  "do",
  "else",
  "elif",
  "if",
  "while",
  "until",
  "time",
  "command",
  "builtin",
  "nohup",
  "!",
  "{",
  "}",
  "export",
  "local",
  "readonly",
]);

/**
 * Reads shell text for the command that starts the server: `exec` lines win, else the last
 * command that names an entry; failing that, the first word that names an existing code file.
 */
export function scanShellText(text: string, ctx: Ctx, scriptPath: string | null): Found {
  const out = empty();
  if (ctx.depth > MAX_DEPTH) return out;
  const scriptDir = ctx.scriptDir ?? ctx.cwd;
  const src = text
    .replace(DIRNAME_RE, SCRIPT_DIR)
    .replace(CD_PWD_RE, SCRIPT_DIR)
    .replace(REALPATH_DIR_RE, SCRIPT_DIR);
  const vars = new Map<string, string>();
  if (scriptPath !== null) vars.set("0", scriptPath);
  let cwd = ctx.cwd;
  let best: Found | null = null;
  const words: string[] = [];
  for (const command of splitCommands(src)) {
    let k = 0;
    let isExec = false;
    while (k < command.length) {
      const w = command[k]!;
      if (KEYWORDS.has(w)) {
        if (w === "exec") isExec = true;
        k++;
        continue;
      }
      const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(w);
      if (m !== null) {
        vars.set(m[1]!, expand(m[2]!, vars, scriptDir, ctx.env));
        k++;
        continue;
      }
      break;
    }
    if (k >= command.length) continue;
    const argv = command.slice(k).map((w) => expand(w, vars, scriptDir, ctx.env));
    words.push(...argv);
    const c = argv[0]!;
    if (c === "cd") {
      const target = argv[1];
      if (target !== undefined && !target.includes(UNKNOWN)) {
        const d = resolve(cwd, target);
        if (isDir(d)) cwd = d;
      }
      continue;
    }
    const here: Ctx = { ...ctx, cwd, scriptDir };
    if (c === "source" || c === ".") {
      const f = argv[1] === undefined ? null : findScript(argv[1], { ...here, strict: false }, []);
      if (f !== null) {
        out.wrappers.push(f);
        const inner = scanScript(f, { ...here, depth: ctx.depth + 1 });
        out.wrappers.push(...inner.wrappers);
      }
      continue;
    }
    const r = here.resolve(argv, here);
    if (r.entry !== null || (r.runtime !== null && best === null)) best = r;
    if (isExec && r.entry !== null) break;
  }
  if (best !== null) merge(out, best);
  if (out.entry === null) {
    for (const w of words) {
      if (!CODE_EXT_RE.test(w)) continue;
      const f = findScript(w, { ...ctx, cwd, scriptDir, strict: false }, []);
      if (f !== null && f !== scriptPath) {
        out.entry = f;
        break;
      }
    }
  }
  return out;
}

function expand(
  word: string,
  vars: Map<string, string>,
  scriptDir: string,
  env: Record<string, string>,
): string {
  let w = word.split(SCRIPT_DIR).join(scriptDir);
  if (!w.includes("$")) return w;
  w = w.replace(/\$(?:[@*#?$!]|\d)|\$\{(?:[@*#]|\d+)\}/g, "");
  w = w.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-=]([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (_m, a: string | undefined, dflt: string | undefined, b: string | undefined) => {
      const name = (a ?? b)!;
      return vars.get(name) ?? env[name] ?? dflt ?? UNKNOWN;
    },
  );
  return w.replace(/\$\([^)]*\)|`[^`]*`/g, UNKNOWN);
}
