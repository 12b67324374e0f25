// From a launch command to the files that decide which code runs: the executable, the entry
// script, the wrapper scripts in between, and the runtime. Nothing here executes anything: it
// looks files up (PATH, node_modules/.bin, package.json) and reads script text.
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

export type RuntimeKind = "node" | "python" | "deno" | "bun";

export interface Resolved {
  /** The command resolved on PATH (realpath). */
  executable: string | null;
  /** Absolute path of the script the runtime runs. */
  entry: string | null;
  /** Absolute paths of scripts between the command and the entry (shell scripts, CLIs, preloads). */
  wrappers: string[];
  runtime: { kind: RuntimeKind; exe: string | null } | null;
}

interface Partial {
  exe: string | null;
  entry: string | null;
  wrappers: string[];
  runtime: { kind: RuntimeKind; exe: string | null } | null;
}

interface Ctx {
  cwd: string;
  path: string;
  env: Record<string, string>;
  depth: number;
  /** Top level: an entry named on the command line must be readable. */
  strict: boolean;
  /** Directory of the script whose text is being read (relative names are also tried there). */
  scriptDir: string | null;
  seen: Set<string>;
}

const MAX_DEPTH = 6;
const SCRIPT_TEXT_LIMIT = 256 * 1024;

export const JS_EXTS = [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx"];
const CODE_EXT_RE = /\.(?:[cm]?[jt]s|[jt]sx|py|pyw|rb|pl|php|lua)$/;

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
  return new IdentityError(`Cannot read the ${what} ${displayPath(abs, cwd)} (${describe(code)}).`);
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

function isDir(p: string): boolean {
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

function realpathOr(p: string): string {
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

function isScript(p: string | null): p is string {
  return p !== null && readHead(p, 2) === "#!";
}

function readText(p: string): string | null {
  try {
    const buf = readFileSync(p);
    if (buf.length > SCRIPT_TEXT_LIMIT || buf.includes(0)) return null;
    return buf.toString("utf8");
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// Tools and their argument grammars

type Tool =
  | "node"
  | "python"
  | "deno"
  | "bun"
  | "tsx"
  | "ts-node"
  | "nodemon"
  | "npx"
  | "npm"
  | "pnpm"
  | "yarn"
  | "uv"
  | "shell"
  | "prefix";

export function toolOf(name: string): Tool | null {
  const n = name.toLowerCase().replace(/\.(exe|cmd|bat)$/, "");
  if (n === "node" || n === "nodejs") return "node";
  if (/^python(\d+(\.\d+)?)?$/.test(n) || /^pypy3?$/.test(n)) return "python";
  if (n === "deno") return "deno";
  if (n === "bun") return "bun";
  if (n === "tsx") return "tsx";
  if (n === "ts-node" || n === "ts-node-esm") return "ts-node";
  if (n === "nodemon") return "nodemon";
  if (n === "npx" || n === "pnpx" || n === "bunx") return "npx";
  if (n === "npm") return "npm";
  if (n === "pnpm") return "pnpm";
  if (n === "yarn") return "yarn";
  if (n === "uv") return "uv";
  if (["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"].includes(n)) return "shell";
  if (n in PREFIX) return "prefix";
  return null;
}

const NODE_VALUE = new Set([
  "-r",
  "--require",
  "--import",
  "--loader",
  "--experimental-loader",
  "-C",
  "--conditions",
  "--env-file",
  "--env-file-if-exists",
  "--watch-path",
  "--inspect-port",
  "--debug-port",
  "--title",
  "--input-type",
  "--experimental-default-type",
  "--disable-warning",
  "--unhandled-rejections",
  "--dns-result-order",
  "--redirect-warnings",
  "--diagnostic-dir",
  "--report-dir",
  "--report-directory",
  "--report-filename",
  "--report-signal",
  "--heapsnapshot-signal",
  "--heapsnapshot-near-heap-limit",
  "--icu-data-dir",
  "--openssl-config",
  "--tls-cipher-list",
  "--tls-keylog",
  "--secure-heap",
  "--secure-heap-min",
  "--trace-event-categories",
  "--trace-event-file-pattern",
  "--cpu-prof-dir",
  "--cpu-prof-name",
  "--cpu-prof-interval",
  "--heap-prof-dir",
  "--heap-prof-name",
  "--heap-prof-interval",
  "--experimental-policy",
  "--policy-integrity",
  "--localstorage-file",
  "--allow-fs-read",
  "--allow-fs-write",
  "--snapshot-blob",
  "--max-http-header-size",
  "--experimental-config-file",
  "--watch-kill-signal",
  "--use-largepages",
  "--stack-trace-limit",
  "--max-old-space-size",
  "--max-semi-space-size",
  "--stack-size",
  "--test-reporter",
  "--test-reporter-destination",
  "--test-name-pattern",
  "--test-skip-pattern",
  "--test-concurrency",
  "--test-timeout",
  "--test-shard",
  "--run",
]);
const NODE_PRELOAD = new Set(["-r", "--require", "--import", "--loader", "--experimental-loader"]);
const NODE_INLINE = new Set(["-e", "--eval", "-p", "--print", "-pe", "-ep", "--run"]);

export interface ParsedArgs {
  /** The script argument, as written (not resolved). */
  entry: string | null;
  preloads: string[];
  /** Index of the argument after the entry. */
  rest: number;
}

/** `node [node-flags] file args`; also the grammar of tsx / ts-node / nodemon with extra value flags. */
export function parseNodeArgs(args: string[], extraValue: ReadonlySet<string> = new Set()): ParsedArgs {
  const preloads: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") return { entry: args[i + 1] ?? null, preloads, rest: i + 2 };
    if (a === "-") return { entry: null, preloads, rest: i + 1 };
    if (a.startsWith("-")) {
      const eq = a.indexOf("=");
      const name = eq > 0 ? a.slice(0, eq) : a;
      if (NODE_INLINE.has(name)) return { entry: null, preloads, rest: args.length };
      if (NODE_VALUE.has(name) || extraValue.has(name)) {
        const value = eq > 0 ? a.slice(eq + 1) : args[++i];
        if (value !== undefined && NODE_PRELOAD.has(name)) preloads.push(value);
      }
      continue;
    }
    return { entry: a, preloads, rest: i + 1 };
  }
  return { entry: null, preloads, rest: args.length };
}

const PY_VALUE = new Set(["-W", "-X", "--check-hash-based-pycs"]);

/** `python [flags] file` / `-m module` / `-c code`. */
export function parsePythonArgs(args: string[]): { entry: string | null; module: string | null } {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") return { entry: args[i + 1] ?? null, module: null };
    if (a === "-") return { entry: null, module: null };
    if (a.startsWith("-c")) return { entry: null, module: null };
    if (a.startsWith("-m")) return { entry: null, module: a.length > 2 ? a.slice(2) : (args[i + 1] ?? null) };
    if (a.startsWith("-")) {
      if (PY_VALUE.has(a)) i++;
      continue;
    }
    return { entry: a, module: null };
  }
  return { entry: null, module: null };
}

/** `sh [opts] script args` or `sh [opts] -c 'command string'`. */
export function parseShellArgs(args: string[]): { script: string | null; command: string | null } {
  let cflag = false;
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") {
      i++;
      break;
    }
    if (a === "-o" || a === "+o" || a === "-O" || a === "+O") {
      i++;
      continue;
    }
    if ((a.startsWith("-") || a.startsWith("+")) && a.length > 1) {
      if (a.startsWith("-") && !a.startsWith("--") && a.includes("c")) cflag = true;
      continue;
    }
    break;
  }
  const operand = args[i] ?? null;
  return cflag ? { script: null, command: operand } : { script: operand, command: null };
}

const DENO_VALUE = new Set([
  "-c",
  "--config",
  "--import-map",
  "--cert",
  "--location",
  "--seed",
  "--ext",
  "-L",
]);

export function parseDenoArgs(args: string[]): string | null {
  let i = 0;
  if (args[0] === "run" || args[0] === "serve") i = 1;
  else if (args[0] !== undefined && !args[0].startsWith("-") && !CODE_EXT_RE.test(args[0])) return null;
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") return args[i + 1] ?? null;
    if (a.startsWith("-")) {
      if (DENO_VALUE.has(a)) i++;
      continue;
    }
    return /^(?:https?|jsr|npm|data):/.test(a) ? null : a;
  }
  return null;
}

const BUN_VALUE = new Set([
  "--cwd",
  "-r",
  "--preload",
  "--tsconfig-override",
  "-d",
  "--define",
  "-l",
  "--loader",
]);

export function parseBunArgs(args: string[]): { entry: string | null; preloads: string[] } {
  const preloads: string[] = [];
  let i = args[0] === "run" ? 1 : 0;
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") return { entry: args[i + 1] ?? null, preloads };
    if (a.startsWith("-")) {
      const eq = a.indexOf("=");
      const name = eq > 0 ? a.slice(0, eq) : a;
      if (BUN_VALUE.has(name) || name === "--env-file") {
        const v = eq > 0 ? a.slice(eq + 1) : args[++i];
        if (v !== undefined && (name === "-r" || name === "--preload")) preloads.push(v);
      }
      continue;
    }
    return { entry: a, preloads };
  }
  return { entry: null, preloads };
}

const TSX_VALUE = new Set(["--tsconfig", "--include", "--exclude", "--ignore"]);
const TSNODE_VALUE = new Set(["-P", "--project", "-O", "--compilerOptions", "-I", "--ignore", "--cwd"]);
const NODEMON_VALUE = new Set([
  "-w",
  "--watch",
  "-e",
  "--ext",
  "-i",
  "--ignore",
  "-x",
  "--exec",
  "--delay",
  "-d",
  "--signal",
  "-s",
  "--config",
  "--cwd",
]);

/** Commands that start another command after their own options. */
const PREFIX: Record<string, { value: string[]; positional?: number }> = {
  env: { value: ["-u", "--unset", "-C", "--chdir"] },
  nohup: { value: [] },
  setsid: { value: [] },
  time: { value: ["-f", "--format", "-o", "--output"] },
  nice: { value: ["-n", "--adjustment"] },
  stdbuf: { value: ["-i", "-o", "-e"] },
  timeout: { value: ["-s", "--signal", "-k", "--kill-after"], positional: 1 },
  "cross-env": { value: [] },
  dotenv: { value: ["-e", "-c", "-v", "-p"] },
};

// ---------------------------------------------------------------------------------------------
// Resolution

function empty(exe: string | null = null): Partial {
  return { exe, entry: null, wrappers: [], runtime: null };
}

/** Folds what a command started by `out` resolved to into `out`. */
function merge(out: Partial, inner: Partial): void {
  if (isScript(inner.exe) && inner.exe !== inner.entry) out.wrappers.push(inner.exe);
  out.wrappers.push(...inner.wrappers);
  if (inner.entry !== null) out.entry = inner.entry;
  if (inner.runtime !== null) out.runtime = inner.runtime;
}

function nodeRuntime(ctx: Ctx): { kind: RuntimeKind; exe: string | null } {
  const p = which("node", ctx.cwd, ctx.path);
  return { kind: "node", exe: p === null ? null : realpathOr(p) };
}

/**
 * The existing file a script argument names, trying (in order) the name itself, the name with
 * each of `exts`, and, for a directory, its package.json "main" or index file. In strict mode a
 * missing or unreadable file is an IdentityError; otherwise null.
 */
function findScript(word: string, ctx: Ctx, exts: readonly string[], what = "entry file"): string | null {
  for (const base of candidates(word, ctx)) {
    const found = withExtensions(base, exts);
    if (found !== null) {
      if (ctx.strict) {
        try {
          accessSync(found, constants.R_OK);
        } catch (e) {
          throw unreadable(what, found, ctx.cwd, (e as NodeJS.ErrnoException).code);
        }
      }
      return found;
    }
  }
  if (ctx.strict) {
    const p = resolve(ctx.cwd, word);
    let code = "ENOENT";
    try {
      if (statSync(p).isDirectory()) code = "EISDIR";
    } catch {}
    throw unreadable(what, p, ctx.cwd, code);
  }
  return null;
}

const UNKNOWN = "\u0002";
const SCRIPT_DIR = "\u0001";

function candidates(word: string, ctx: Ctx): string[] {
  if (word === "") return [];
  if (word.includes(UNKNOWN)) {
    // "$SOMEDIR/dist/server.js" with an unknown variable: try the remainder where it usually is.
    const rem = word.slice(word.lastIndexOf(UNKNOWN) + 1).replace(/^\/+/, "");
    if (rem === "" || rem.includes("$")) return [];
    const out = [resolve(ctx.cwd, rem)];
    if (ctx.scriptDir !== null) out.push(resolve(ctx.scriptDir, rem), resolve(ctx.scriptDir, "..", rem));
    return out;
  }
  if (word.includes("$")) return [];
  const out = [resolve(ctx.cwd, word)];
  if (!ctx.strict && ctx.scriptDir !== null && !isAbsolute(word)) out.push(resolve(ctx.scriptDir, word));
  return out;
}

function withExtensions(base: string, exts: readonly string[]): string | null {
  if (isFile(base)) return base;
  for (const e of exts) if (isFile(base + e)) return base + e;
  if (isDir(base)) {
    const pkg = readJson(join(base, "package.json"));
    const main = typeof pkg?.main === "string" ? pkg.main : null;
    if (main !== null) {
      const m = resolve(base, main);
      if (isFile(m)) return m;
      for (const e of exts) if (isFile(m + e)) return m + e;
    }
    for (const e of exts) if (isFile(join(base, `index${e}`))) return join(base, `index${e}`);
  }
  return null;
}

function readJson(p: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(readFileSync(p, "utf8"));
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

function addPreloads(out: Partial, preloads: string[], ctx: Ctx): void {
  for (const p of preloads) {
    if (!(p.startsWith(".") || p.startsWith("/") || p.startsWith("file:"))) continue;
    const f = withExtensions(resolve(ctx.cwd, p.replace(/^file:\/\//, "")), JS_EXTS);
    if (f !== null) out.wrappers.push(f);
  }
}

const NODE_EXTS = [".js", ".json", ".node", ".mjs", ".cjs"];
const TS_EXTS = [".ts", ".tsx", ".mts", ".cts", ".js", ".mjs", ".cjs", ".jsx"];

function resolveArgv(argv: string[], ctx: Ctx, nameOverride?: string): Partial {
  if (argv.length === 0 || ctx.depth > MAX_DEPTH) return empty();
  const cmd = argv[0]!;
  const args = argv.slice(1);
  if (cmd.includes(UNKNOWN) || cmd.includes("$")) return empty();
  const found = which(cmd, ctx.cwd, ctx.path, ctx.strict);
  const real = found === null ? null : realpathOr(found);
  const out = empty(real);
  let tool = toolOf(nameOverride ?? basename(cmd));
  if (tool === null && real !== null) tool = toolOf(basename(real));
  const sub: Ctx = { ...ctx, depth: ctx.depth + 1, strict: false };

  switch (tool) {
    case "node": {
      out.runtime = { kind: "node", exe: real };
      const p = parseNodeArgs(args);
      addPreloads(out, p.preloads, ctx);
      if (p.entry !== null) out.entry = findScript(p.entry, ctx, NODE_EXTS);
      return out;
    }
    case "tsx":
    case "ts-node":
    case "nodemon": {
      out.runtime = nodeRuntime(ctx);
      const a = tool === "tsx" && args[0] === "watch" ? args.slice(1) : args;
      const p = parseNodeArgs(
        a,
        tool === "tsx" ? TSX_VALUE : tool === "ts-node" ? TSNODE_VALUE : NODEMON_VALUE,
      );
      addPreloads(out, p.preloads, ctx);
      if (tool === "nodemon") {
        const x = a.findIndex((w) => w === "-x" || w === "--exec");
        if (x >= 0 && a[x + 1] !== undefined) {
          const inner = resolveArgv([...splitWords(a[x + 1]!), ...(p.entry === null ? [] : [p.entry])], sub);
          merge(out, inner);
          return out;
        }
        const cfg = join(ctx.cwd, "nodemon.json");
        if (isFile(cfg)) out.wrappers.push(cfg);
        if (p.entry === null) {
          const main = readJson(join(ctx.cwd, "package.json"))?.main;
          if (typeof main === "string") out.entry = findScript(main, { ...ctx, strict: false }, NODE_EXTS);
          return out;
        }
      }
      if (p.entry !== null) out.entry = findScript(p.entry, ctx, TS_EXTS);
      return out;
    }
    case "python": {
      out.runtime = { kind: "python", exe: real };
      const p = parsePythonArgs(args);
      if (p.entry !== null) out.entry = findScript(p.entry, ctx, []);
      else if (p.module !== null) out.entry = pythonModule(p.module, ctx.cwd);
      return out;
    }
    case "deno": {
      out.runtime = { kind: "deno", exe: real };
      const e = parseDenoArgs(args);
      if (e !== null) out.entry = findScript(e, ctx, []);
      return out;
    }
    case "bun": {
      out.runtime = { kind: "bun", exe: real };
      if (args[0] === "x") return npxLike(args.slice(1), out, ctx, sub);
      const p = parseBunArgs(args);
      addPreloads(out, p.preloads, ctx);
      if (p.entry === null) return out;
      const asFile = findScript(p.entry, { ...ctx, strict: false }, TS_EXTS);
      if (asFile !== null) out.entry = asFile;
      else if (!packageScript(p.entry, [], out, ctx, sub)) out.entry = findScript(p.entry, ctx, TS_EXTS);
      return out;
    }
    case "npx":
      out.runtime = nodeRuntime(ctx);
      return npxLike(args, out, ctx, sub);
    case "npm":
    case "pnpm":
    case "yarn":
      out.runtime = nodeRuntime(ctx);
      return packageManager(tool, args, out, ctx, sub);
    case "uv":
      return uvRun(args, out, ctx, sub);
    case "shell": {
      const p = parseShellArgs(args);
      if (p.command !== null) {
        merge(out, scanShellText(p.command, { ...sub, scriptDir: ctx.cwd }, null));
      } else if (p.script !== null) {
        const script = findScript(p.script, ctx, [], "wrapper script");
        if (script !== null) {
          out.wrappers.push(script);
          merge(out, scanScript(script, sub));
        }
      }
      return out;
    }
    case "prefix": {
      const rest = skipPrefix(nameOverride ?? basename(cmd), args);
      if (rest.length > 0) merge(out, resolveArgv(rest, { ...sub, strict: ctx.strict }));
      return out;
    }
    default: {
      if (real === null) return out;
      const interp = shebangOf(real);
      if (interp !== null) {
        // The kernel runs `interp... script args`: resolve exactly that.
        const inner = resolveArgv([...interp, real, ...args], { ...sub, cwd: ctx.cwd });
        if (inner.entry === null) out.wrappers.push(real);
        merge(out, inner);
        return out;
      }
      const dd = args.indexOf("--");
      if (dd >= 0 && dd + 1 < args.length) merge(out, resolveArgv(args.slice(dd + 1), sub));
      return out;
    }
  }
}

function skipPrefix(name: string, args: string[]): string[] {
  const spec = PREFIX[basename(name).toLowerCase()] ?? { value: [] };
  let positional = spec.positional ?? 0;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") return args.slice(i + 1);
    if (a === "-S" || a === "--split-string") return [...splitWords(args[i + 1] ?? ""), ...args.slice(i + 2)];
    if (a.startsWith("-") && a.length > 1) {
      if (spec.value.includes(a)) i++;
      continue;
    }
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(a)) continue;
    if (positional > 0) {
      positional--;
      continue;
    }
    return args.slice(i);
  }
  return [];
}

function pythonModule(mod: string, cwd: string): string | null {
  const rel = mod.split(".").join("/");
  for (const root of [cwd, join(cwd, "src")]) {
    for (const c of [`${rel}.py`, `${rel}/__main__.py`]) {
      const p = join(root, c);
      if (isFile(p)) return p;
    }
  }
  return null;
}

function binDirsUp(start: string): string[] {
  const out: string[] = [];
  let dir = start;
  for (;;) {
    const b = join(dir, "node_modules", ".bin");
    if (isDir(b)) out.push(b);
    const up = dirname(dir);
    if (up === dir) return out;
    dir = up;
  }
}

function withBinPath(ctx: Ctx, dir: string): Ctx {
  const bins = binDirsUp(dir);
  return { ...ctx, cwd: dir, path: [...bins, ctx.path].filter((p) => p !== "").join(delimiter) };
}

/** npx / npm exec / pnpm dlx / bunx: the package's bin, found in node_modules upward from cwd. */
function npxLike(args: string[], out: Partial, ctx: Ctx, sub: Ctx): Partial {
  let pkg: string | null = null;
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") {
      i++;
      break;
    }
    if (a === "-p" || a === "--package") {
      pkg = args[++i] ?? null;
      continue;
    }
    if (a.startsWith("--package=")) {
      pkg = a.slice("--package=".length);
      continue;
    }
    if (a === "-c" || a === "--call") {
      merge(
        out,
        scanShellText(args[i + 1] ?? "", withBinPath({ ...sub, scriptDir: ctx.cwd }, ctx.cwd), null),
      );
      return out;
    }
    if (a.startsWith("-")) continue;
    break;
  }
  const spec = args[i];
  if (spec === undefined) return out;
  const rest = args.slice(i + 1);
  const bin = resolveBin(spec, ctx.cwd, pkg !== null);
  if (bin === null) return out;
  const inner = resolveArgv([bin.path, ...rest], withBinPath(sub, ctx.cwd), bin.name);
  if (inner.entry === null && toolOf(bin.name) === null) inner.entry = bin.path;
  merge(out, inner);
  return out;
}

function resolveBin(spec: string, cwd: string, isBinName: boolean): { path: string; name: string } | null {
  if (/^(?:[a-z+]+:|\.|\/)/.test(spec)) return null; // git:, file:, URLs, paths: not resolved
  const at = spec.lastIndexOf("@");
  const name = at > 0 ? spec.slice(0, at) : spec;
  const unscoped = name.includes("/") ? name.slice(name.indexOf("/") + 1) : name;
  let dir = cwd;
  for (;;) {
    if (!isBinName) {
      const pkgDir = join(dir, "node_modules", name);
      const pkg = readJson(join(pkgDir, "package.json"));
      if (pkg !== null) {
        const bin = pkg.bin;
        let rel: string | null = null;
        let binName = unscoped;
        if (typeof bin === "string") rel = bin;
        else if (bin !== null && typeof bin === "object") {
          const entries = Object.entries(bin as Record<string, unknown>).filter(
            ([, v]) => typeof v === "string",
          );
          const hit =
            entries.find(([k]) => k === unscoped) ?? (entries.length === 1 ? entries[0] : undefined);
          if (hit !== undefined) {
            binName = hit[0];
            rel = hit[1] as string;
          }
        }
        if (rel !== null && isFile(resolve(pkgDir, rel)))
          return { path: realpathOr(resolve(pkgDir, rel)), name: binName };
      }
    }
    const link = join(dir, "node_modules", ".bin", unscoped);
    if (isFile(link)) return { path: realpathOr(link), name: unscoped };
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

/** Runs `name` from package.json scripts into `out`; false when there is no such script. */
function packageScript(name: string, extra: string[], out: Partial, ctx: Ctx, sub: Ctx): boolean {
  const pkgFile = findUp(ctx.cwd, ["package.json"]);
  if (pkgFile === null) return false;
  const scripts = readJson(pkgFile)?.scripts as Record<string, unknown> | undefined;
  let text = scripts !== undefined && typeof scripts[name] === "string" ? (scripts[name] as string) : null;
  const pkgDir = dirname(pkgFile);
  if (text === null && name === "start" && isFile(join(pkgDir, "server.js"))) text = "node server.js";
  if (text === null) return false;
  out.wrappers.push(pkgFile);
  const line = extra.length > 0 ? `${text} ${extra.map(quoteWord).join(" ")}` : text;
  merge(out, scanShellText(line, withBinPath({ ...sub, scriptDir: pkgDir }, pkgDir), null));
  return true;
}

function quoteWord(w: string): string {
  return `'${w.replace(/'/g, `'\\''`)}'`;
}

const PM_VALUE = new Set(["--prefix", "-C", "--dir", "--cwd", "-w", "--workspace", "--filter", "-F"]);

function packageManager(
  tool: "npm" | "pnpm" | "yarn",
  args: string[],
  out: Partial,
  ctx: Ctx,
  sub: Ctx,
): Partial {
  let i = 0;
  let dir = ctx.cwd;
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith("-")) break;
    const eq = a.indexOf("=");
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (PM_VALUE.has(name)) {
      const v = eq > 0 ? a.slice(eq + 1) : args[++i];
      if (v !== undefined && ["--prefix", "-C", "--dir", "--cwd"].includes(name)) dir = resolve(ctx.cwd, v);
    }
  }
  const here = { ...ctx, cwd: dir };
  const subHere = { ...sub, cwd: dir };
  const cmd = args[i];
  if (cmd === undefined) return out;
  const rest = args.slice(i + 1);
  if (cmd === "exec" || cmd === "x" || cmd === "dlx") {
    if (tool !== "npm" && cmd === "exec" && rest.length > 0) {
      merge(out, resolveArgv(rest, withBinPath(subHere, dir)));
      return out;
    }
    return npxLike(rest, out, here, subHere);
  }
  let script: string | undefined;
  let extra: string[] = [];
  if (
    cmd === "start" ||
    cmd === "restart" ||
    cmd === "test" ||
    cmd === "t" ||
    cmd === "tst" ||
    cmd === "stop"
  ) {
    script = cmd === "t" || cmd === "tst" ? "test" : cmd === "restart" ? "start" : cmd;
    extra = rest;
  } else if (cmd === "run" || cmd === "run-script" || cmd === "rum" || cmd === "urn") {
    script = rest.find((w) => !w.startsWith("-"));
    extra = script === undefined ? [] : rest.slice(rest.indexOf(script) + 1);
  } else if (tool !== "npm") {
    script = cmd;
    extra = rest;
  }
  if (extra[0] === "--") extra = extra.slice(1);
  if (script !== undefined) packageScript(script, extra, out, here, subHere);
  return out;
}

const UV_VALUE = new Set([
  "--with",
  "--with-requirements",
  "--with-editable",
  "--python",
  "-p",
  "--project",
  "--directory",
  "--package",
  "--extra",
  "--group",
  "--env-file",
  "--index",
  "--index-url",
  "--extra-index-url",
  "--find-links",
  "-f",
  "--cache-dir",
  "--config-file",
]);

function uvRun(args: string[], out: Partial, ctx: Ctx, sub: Ctx): Partial {
  if (args[0] !== "run") return out;
  let project = ctx.cwd;
  let module = false;
  let i = 1;
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") {
      i++;
      break;
    }
    if (!a.startsWith("-")) break;
    const eq = a.indexOf("=");
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (name === "-m" || name === "--module") module = true;
    if (UV_VALUE.has(name)) {
      const v = eq > 0 ? a.slice(eq + 1) : args[++i];
      if (v !== undefined && (name === "--project" || name === "--directory")) project = resolve(ctx.cwd, v);
    }
  }
  const rest = args.slice(i);
  if (rest.length === 0) return out;
  const venvBin = join(project, ".venv", process.platform === "win32" ? "Scripts" : "bin");
  const py = which("python", venvBin, venvBin) ?? which("python3", venvBin, venvBin);
  const pyRuntime = { kind: "python" as const, exe: py === null ? null : realpathOr(py) };
  if (module) {
    out.runtime = pyRuntime;
    out.entry = pythonModule(rest[0]!, project);
    return out;
  }
  if (/\.pyw?$/.test(rest[0]!)) {
    out.runtime = pyRuntime;
    out.entry = findScript(rest[0]!, ctx, []);
    return out;
  }
  const inner = resolveArgv(rest, { ...sub, path: [venvBin, ctx.path].join(delimiter) });
  merge(out, inner);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Shell text: wrapper scripts, package.json scripts, `sh -c` strings

function scanScript(script: string, ctx: Ctx): Partial {
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
function scanShellText(text: string, ctx: Ctx, scriptPath: string | null): Partial {
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
  let best: Partial | null = null;
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
    const r = resolveArgv(argv, here);
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

function matchParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") {
      depth--;
      if (depth === 0) return i;
    } else if (c === "'") {
      const j = text.indexOf("'", i + 1);
      if (j < 0) return text.length - 1;
      i = j;
    }
  }
  return text.length - 1;
}

/** Splits shell text into simple commands of unquoted words (approximate, never evaluates). */
export function splitCommands(text: string): string[][] {
  const cmds: string[][] = [];
  let words: string[] = [];
  let w = "";
  let inWord = false;
  const endWord = () => {
    if (inWord) words.push(w);
    w = "";
    inWord = false;
  };
  const endCmd = () => {
    endWord();
    if (words.length > 0) cmds.push(words);
    words = [];
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "\\") {
      if (text[i + 1] !== "\n") w += text[i + 1] ?? "";
      i++;
      inWord = inWord || text[i] !== "\n";
      continue;
    }
    if (c === "'") {
      const j = text.indexOf("'", i + 1);
      const end = j < 0 ? text.length : j;
      w += text.slice(i + 1, end);
      i = end;
      inWord = true;
      continue;
    }
    if (c === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        const d = text[i]!;
        if (d === "\\" && i + 1 < text.length && '"\\$`\n'.includes(text[i + 1]!)) {
          if (text[i + 1] !== "\n") w += text[i + 1];
          i += 2;
          continue;
        }
        if (d === "$" && text[i + 1] === "(") {
          const j = matchParen(text, i + 1);
          w += text.slice(i, j + 1);
          i = j + 1;
          continue;
        }
        w += d;
        i++;
      }
      inWord = true;
      continue;
    }
    if (c === "$" && text[i + 1] === "(") {
      const j = matchParen(text, i + 1);
      w += text.slice(i, j + 1);
      i = j;
      inWord = true;
      continue;
    }
    if (c === "`") {
      const j = text.indexOf("`", i + 1);
      const end = j < 0 ? text.length - 1 : j;
      w += text.slice(i, end + 1);
      i = end;
      inWord = true;
      continue;
    }
    if (c === "#" && !inWord) {
      const j = text.indexOf("\n", i);
      i = j < 0 ? text.length : j - 1;
      continue;
    }
    if (c === "\n" || c === ";" || c === "&" || c === "|" || c === "(" || c === ")") {
      endCmd();
      continue;
    }
    if (c === " " || c === "\t" || c === "\r") {
      endWord();
      continue;
    }
    if ((c === ">" || c === "<") && !inWord) {
      // A redirection: skip the operator and its target word.
      let j = i + 1;
      while (j < text.length && (text[j] === ">" || text[j] === "&")) j++;
      while (j < text.length && (text[j] === " " || text[j] === "\t")) j++;
      while (j < text.length && !" \t\n;&|()".includes(text[j]!)) j++;
      i = j - 1;
      continue;
    }
    w += c;
    inWord = true;
  }
  endCmd();
  return cmds;
}

function splitWords(s: string): string[] {
  return splitCommands(s)[0] ?? [];
}

// ---------------------------------------------------------------------------------------------

/** Resolves a launch. Throws IdentityError when the command or a named script cannot be read. */
export function resolveLaunch(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
): Resolved {
  const pathEnv = env.PATH ?? process.env.PATH ?? "";
  const ctx: Ctx = { cwd, path: pathEnv, env, depth: 0, strict: true, scriptDir: null, seen: new Set() };
  const found = which(command, cwd, pathEnv);
  if (found === null) {
    const where = command.includes("/")
      ? `${displayPath(resolve(cwd, command), cwd)}`
      : `"${command}" on PATH`;
    throw new IdentityError(`Cannot find the command ${where} (it does not exist or is not executable).`);
  }
  const r = resolveArgv([command, ...args], ctx);
  const executable = realpathOr(found);
  if (r.runtime?.kind === "node" && env.NODE_OPTIONS !== undefined) {
    addPreloads(r, parseNodeArgs([...splitWords(env.NODE_OPTIONS), "--"]).preloads, ctx);
  }
  const wrappers: string[] = [];
  const seen = new Set<string>();
  for (const w of r.wrappers) {
    if (w === r.entry || seen.has(w)) continue;
    seen.add(w);
    wrappers.push(w);
  }
  return { executable, entry: r.entry, wrappers, runtime: r.runtime };
}

/** Scripts a running process executes, from its argv (no PATH lookups, no script reading). */
export function scriptsOfProcess(exe: string | null, argv: string[], cwd: string): string[] {
  const name = basename(exe ?? argv[0] ?? "").replace(/ \(deleted\)$/, "");
  const tool = toolOf(name) ?? toolOf(basename(argv[0] ?? ""));
  const args = argv.slice(1);
  const ctx: Ctx = { cwd, path: "", env: {}, depth: 0, strict: false, scriptDir: null, seen: new Set() };
  const out: string[] = [];
  const add = (word: string | null, exts: readonly string[]) => {
    if (word === null) return;
    const f = findScript(word, ctx, exts);
    if (f !== null) out.push(f);
  };
  switch (tool) {
    case "node": {
      const p = parseNodeArgs(args);
      for (const pre of p.preloads) if (pre.startsWith(".") || pre.startsWith("/")) add(pre, JS_EXTS);
      add(p.entry, NODE_EXTS);
      break;
    }
    case "python":
      add(parsePythonArgs(args).entry, []);
      break;
    case "shell":
      add(parseShellArgs(args).script, []);
      break;
    case "deno":
      add(parseDenoArgs(args), []);
      break;
    case "bun":
      add(parseBunArgs(args).entry, TS_EXTS);
      break;
    default:
      break;
  }
  return out;
}
