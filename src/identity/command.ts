// From one argv to the code it runs: which tool the command is, then that tool's own reading of
// its arguments, following wrappers (shebangs, shells, prefix commands, package runners) inward.
import { basename, join } from "node:path";
import { type Ctx, empty, type Found, MAX_DEPTH, merge, type RuntimeKind, UNKNOWN } from "./context.js";
import { addEnvFiles, addPreloads, findScript, NODE_EXTS, pythonModule, TS_EXTS } from "./entry.js";
import { isFile, readJson, realpathOr, shebangOf, which } from "./files.js";
import { npxLike, packageManager, packageScript, uvRun } from "./runners.js";
import { scanScript, scanShellText } from "./shell.js";
import { splitWords } from "./shellWords.js";
import {
  NODEMON_VALUE,
  parseBunArgs,
  parseDenoArgs,
  parseNodeArgs,
  parsePythonArgs,
  parseShellArgs,
  skipPrefix,
  TSNODE_VALUE,
  TSX_VALUE,
  toolOf,
} from "./tools.js";

function nodeRuntime(ctx: Ctx): { kind: RuntimeKind; exe: string | null } {
  const p = which("node", ctx.cwd, ctx.path);
  return { kind: "node", exe: p === null ? null : realpathOr(p) };
}

/** The preloads of a NODE_OPTIONS value. */
export function nodeOptionsPreloads(value: string): string[] {
  return parseNodeArgs([...splitWords(value), "--"]).preloads;
}

export function resolveArgv(argv: string[], ctx: Ctx, nameOverride?: string): Found {
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
      addEnvFiles(out, p.envFiles, ctx, nodeOptionsPreloads);
      if (p.entry !== null) out.entry = findScript(p.entry, ctx, NODE_EXTS, undefined, out.wrappers);
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
      addEnvFiles(out, p.envFiles, ctx, nodeOptionsPreloads);
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
          // nodemon runs package.json "main": the file that chose the entry is part of it
          const pkgFile = join(ctx.cwd, "package.json");
          const main = readJson(pkgFile)?.main;
          if (typeof main === "string") {
            out.entry = findScript(main, { ...ctx, strict: false }, NODE_EXTS, undefined, out.wrappers);
            if (out.entry !== null) out.wrappers.push(pkgFile);
          }
          return out;
        }
      }
      if (p.entry !== null) out.entry = findScript(p.entry, ctx, TS_EXTS, undefined, out.wrappers);
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
      const asFile = findScript(p.entry, { ...ctx, strict: false }, TS_EXTS, undefined, out.wrappers);
      if (asFile !== null) out.entry = asFile;
      else if (!packageScript(p.entry, [], out, ctx, sub))
        out.entry = findScript(p.entry, ctx, TS_EXTS, undefined, out.wrappers);
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
