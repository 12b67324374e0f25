// From a launch command to the files that decide which code runs: the executable, the entry
// script, the wrapper scripts in between, and the runtime. Nothing here executes anything: it
// looks files up (PATH, node_modules/.bin, package.json) and reads script text.
import { basename, resolve } from "node:path";
import { nodeOptionsPreloads, resolveArgv } from "./command.js";
import type { Ctx, RuntimeKind } from "./context.js";
import { addPreloads, findScript, JS_EXTS, NODE_EXTS, TS_EXTS } from "./entry.js";
import { displayPath, IdentityError, realpathOr, which } from "./files.js";
import {
  parseBunArgs,
  parseDenoArgs,
  parseNodeArgs,
  parsePythonArgs,
  parseShellArgs,
  toolOf,
} from "./tools.js";

export type { RuntimeKind } from "./context.js";
export { JS_EXTS } from "./entry.js";
export { displayPath, findUp, IdentityError, unreadable } from "./files.js";

export interface Resolved {
  /** The command resolved on PATH (realpath). */
  executable: string | null;
  /** Absolute path of the script the runtime runs. */
  entry: string | null;
  /** Absolute paths of scripts between the command and the entry (shell scripts, CLIs, preloads). */
  wrappers: string[];
  runtime: { kind: RuntimeKind; exe: string | null } | null;
  /** Variables from `node --env-file` files, under the spawn environment's (which wins). */
  envFileVars: Record<string, string>;
}

/** Resolves a launch. Throws IdentityError when the command or a named script cannot be read. */
export function resolveLaunch(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
): Resolved {
  const pathEnv = env.PATH ?? process.env.PATH ?? "";
  const ctx: Ctx = {
    cwd,
    path: pathEnv,
    env,
    depth: 0,
    strict: true,
    scriptDir: null,
    seen: new Set(),
    resolve: resolveArgv,
  };
  const found = which(command, cwd, pathEnv);
  if (found === null) {
    const where = command.includes("/")
      ? `${displayPath(resolve(cwd, command), cwd)}`
      : `"${command}" on PATH`;
    throw new IdentityError(`cannot find the command ${where} (it does not exist or is not executable).`);
  }
  const r = resolveArgv([command, ...args], ctx);
  const executable = realpathOr(found);
  if (r.runtime?.kind === "node" && env.NODE_OPTIONS !== undefined) {
    addPreloads(r, nodeOptionsPreloads(env.NODE_OPTIONS), ctx);
  }
  const wrappers: string[] = [];
  const seen = new Set<string>();
  for (const w of r.wrappers) {
    if (w === r.entry || seen.has(w)) continue;
    seen.add(w);
    wrappers.push(w);
  }
  return { executable, entry: r.entry, wrappers, runtime: r.runtime, envFileVars: r.env };
}

/** Scripts a running process executes, from its argv (no PATH lookups, no script reading). */
export function scriptsOfProcess(exe: string | null, argv: string[], cwd: string): string[] {
  const name = basename(exe ?? argv[0] ?? "").replace(/ \(deleted\)$/, "");
  const tool = toolOf(name) ?? toolOf(basename(argv[0] ?? ""));
  const args = argv.slice(1);
  const ctx: Ctx = {
    cwd,
    path: "",
    env: {},
    depth: 0,
    strict: false,
    scriptDir: null,
    seen: new Set(),
    resolve: resolveArgv,
  };
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
