// Which tool a command is, and how each tool's argument list names the code it runs: runtimes
// (node and its TypeScript/watch runners, python, deno, bun), shells, and prefix commands such as
// env or nohup that start another command after their own options.
import { basename } from "node:path";
import { type EnvFileArg, envFilesOf } from "./dotenv.js";
import { CODE_EXT_RE } from "./entry.js";
import { scanOptions } from "./options.js";
import { splitWords } from "./shellWords.js";

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
  /** `--env-file` / `--env-file-if-exists` files node reads before it starts */
  envFiles: EnvFileArg[];
}

/** `node [node-flags] file args`; also the grammar of tsx / ts-node / nodemon with extra value flags. */
export function parseNodeArgs(args: string[], extraValue: ReadonlySet<string> = new Set()): ParsedArgs {
  const preloads: string[] = [];
  let envFile = false;
  const valued = { has: (name: string) => NODE_VALUE.has(name) || extraValue.has(name) };
  const end = scanOptions(args, { valued, inline: true }, (name, value, at) => {
    if (value !== undefined && NODE_PRELOAD.has(name)) preloads.push(value);
    if (name === "--env-file" || name === "--env-file-if-exists") envFile = true;
    // `-` reads the program from stdin, and inline code names no file: no entry either way.
    return args[at] === "-" || NODE_INLINE.has(name);
  });
  return {
    entry: end.kind === "stopped" ? null : (args[end.at] ?? null),
    preloads,
    envFiles: envFile ? envFilesOf(args, end.at) : [],
  };
}

const PY_VALUE = new Set(["-W", "-X", "--check-hash-based-pycs"]);

/** `python [flags] file` / `-m module` / `-c code`. */
export function parsePythonArgs(args: string[]): { entry: string | null; module: string | null } {
  const end = scanOptions(
    args,
    { valued: PY_VALUE },
    (a) => a === "-" || a.startsWith("-c") || a.startsWith("-m"),
  );
  if (end.kind !== "stopped") return { entry: args[end.at] ?? null, module: null };
  const a = args[end.at]!;
  if (!a.startsWith("-m")) return { entry: null, module: null };
  return { entry: null, module: a.length > 2 ? a.slice(2) : (args[end.at + 1] ?? null) };
}

const SHELL_OPTIONS = {
  valued: new Set(["-o", "+o", "-O", "+O"]),
  isOption: (a: string) => (a.startsWith("-") || a.startsWith("+")) && a.length > 1,
};

/** `sh [opts] script args` or `sh [opts] -c 'command string'`. */
export function parseShellArgs(args: string[]): { script: string | null; command: string | null } {
  let cflag = false;
  const end = scanOptions(args, SHELL_OPTIONS, (a) => {
    if (a.startsWith("-") && !a.startsWith("--") && a.includes("c")) cflag = true;
    return false;
  });
  const operand = args[end.at] ?? null;
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
  let from = 0;
  if (args[0] === "run" || args[0] === "serve") from = 1;
  else if (args[0] !== undefined && !args[0].startsWith("-") && !CODE_EXT_RE.test(args[0])) return null;
  const end = scanOptions(args, { valued: DENO_VALUE }, undefined, from);
  const a = args[end.at];
  if (a === undefined) return null;
  return end.kind === "operand" && /^(?:https?|jsr|npm|data):/.test(a) ? null : a;
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
  "--env-file",
]);

export function parseBunArgs(args: string[]): { entry: string | null; preloads: string[] } {
  const preloads: string[] = [];
  const end = scanOptions(
    args,
    { valued: BUN_VALUE, inline: true },
    (name, value) => {
      if (value !== undefined && (name === "-r" || name === "--preload")) preloads.push(value);
      return false;
    },
    args[0] === "run" ? 1 : 0,
  );
  return { entry: args[end.at] ?? null, preloads };
}

export const TSX_VALUE = new Set(["--tsconfig", "--include", "--exclude", "--ignore"]);
export const TSNODE_VALUE = new Set([
  "-P",
  "--project",
  "-O",
  "--compilerOptions",
  "-I",
  "--ignore",
  "--cwd",
]);
export const NODEMON_VALUE = new Set([
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
const PREFIX: Record<string, { value: ReadonlySet<string>; positional?: number }> = {
  env: { value: new Set(["-u", "--unset", "-C", "--chdir"]) },
  nohup: { value: new Set() },
  setsid: { value: new Set() },
  time: { value: new Set(["-f", "--format", "-o", "--output"]) },
  nice: { value: new Set(["-n", "--adjustment"]) },
  stdbuf: { value: new Set(["-i", "-o", "-e"]) },
  timeout: { value: new Set(["-s", "--signal", "-k", "--kill-after"]), positional: 1 },
  "cross-env": { value: new Set() },
  dotenv: { value: new Set(["-e", "-c", "-v", "-p"]) },
};

const ENV_ASSIGNMENT_RE = /^[A-Za-z_][A-Za-z0-9_]*=/;

/** The command a prefix command starts: what follows its options, assignments and positionals. */
export function skipPrefix(name: string, args: string[]): string[] {
  const spec = PREFIX[basename(name).toLowerCase()] ?? { value: new Set() };
  // NAME=value assignments may sit among the options, so they are skipped like options.
  const syntax = {
    valued: spec.value,
    isOption: (a: string) => (a.startsWith("-") && a.length > 1) || ENV_ASSIGNMENT_RE.test(a),
  };
  const split = (option: string) => option === "-S" || option === "--split-string";
  let end = scanOptions(args, syntax, split);
  for (let n = spec.positional ?? 0; n > 0 && end.kind === "operand" && end.at < args.length; n--) {
    end = scanOptions(args, syntax, split, end.at + 1);
  }
  if (end.kind === "stopped") return [...splitWords(args[end.at + 1] ?? ""), ...args.slice(end.at + 2)];
  return args.slice(end.at);
}
