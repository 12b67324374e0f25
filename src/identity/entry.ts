// From a script argument as written to the file it names: extensions a runtime would try,
// directories with package.json "main" or an index file, preloads, python modules.
import { accessSync, constants, statSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { type Ctx, type Found, UNKNOWN } from "./context.js";
import { isDir, isFile, readJson, unreadable } from "./files.js";

export const JS_EXTS = [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx"];
export const NODE_EXTS = [".js", ".json", ".node", ".mjs", ".cjs"];
export const TS_EXTS = [".ts", ".tsx", ".mts", ".cts", ".js", ".mjs", ".cjs", ".jsx"];
export const CODE_EXT_RE = /\.(?:[cm]?[jt]s|[jt]sx|py|pyw|rb|pl|php|lua)$/;

/**
 * The existing file a script argument names, trying (in order) the name itself, the name with
 * each of `exts`, and, for a directory, its package.json "main" or index file. In strict mode a
 * missing or unreadable file is an IdentityError; otherwise null.
 */
export function findScript(
  word: string,
  ctx: Ctx,
  exts: readonly string[],
  what = "entry file",
): string | null {
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

export function addPreloads(out: Found, preloads: string[], ctx: Ctx): void {
  for (const p of preloads) {
    if (!(p.startsWith(".") || p.startsWith("/") || p.startsWith("file:"))) continue;
    const f = withExtensions(resolve(ctx.cwd, p.replace(/^file:\/\//, "")), JS_EXTS);
    if (f !== null) out.wrappers.push(f);
  }
}

export function pythonModule(mod: string, cwd: string): string | null {
  const rel = mod.split(".").join("/");
  for (const root of [cwd, join(cwd, "src")]) {
    for (const c of [`${rel}.py`, `${rel}/__main__.py`]) {
      const p = join(root, c);
      if (isFile(p)) return p;
    }
  }
  return null;
}
