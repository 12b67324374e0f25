// From a script argument as written to the file it names: extensions a runtime would try,
// directories with package.json "main" or an index file, preloads, python modules.
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { setOwn } from "../util/setOwn.js";
import { type Ctx, type Found, UNKNOWN } from "./context.js";
import { type EnvFileArg, parseEnvFile } from "./dotenv.js";
import { displayPath, IdentityError, isDir, isFile, readJson, unreadable } from "./files.js";

export const JS_EXTS = [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx"];
export const NODE_EXTS = [".js", ".json", ".node", ".mjs", ".cjs"];
export const TS_EXTS = [".ts", ".tsx", ".mts", ".cts", ".js", ".mjs", ".cjs", ".jsx"];
export const CODE_EXT_RE = /\.(?:[cm]?[jt]s|[jt]sx|py|pyw|rb|pl|php|lua)$/;

/**
 * The existing file a script argument names, trying (in order) the name itself, the name with
 * each of `exts`, and, for a directory, its package.json "main" or index file. In strict mode a
 * missing or unreadable file is an IdentityError; otherwise null. `via` receives the
 * package.json that chose the file, when one did (see withExtensions).
 */
export function findScript(
  word: string,
  ctx: Ctx,
  exts: readonly string[],
  what = "entry file",
  via: string[] | null = null,
): string | null {
  for (const base of candidates(word, ctx)) {
    const found = withExtensions(base, exts, via);
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

/**
 * For a directory, its package.json decides which file runs ("main", else the index file): it
 * is pushed to `via`, to be digested and watched like a wrapper, so that a `main` switched to
 * another file (`node .`) is a change of identity that the watcher reports. Pushed whenever it
 * exists, "main" or not: adding one changes the entry too.
 */
function withExtensions(base: string, exts: readonly string[], via: string[] | null = null): string | null {
  if (isFile(base)) return base;
  for (const e of exts) if (isFile(base + e)) return base + e;
  if (!isDir(base)) return null;
  const found = inDirectory(base, exts);
  const pkgFile = join(base, "package.json");
  if (found !== null && via !== null && isFile(pkgFile)) via.push(pkgFile);
  return found;
}

/** What node runs for a directory: package.json "main" (a file, with extensions, or its index), else the index file. */
function inDirectory(base: string, exts: readonly string[]): string | null {
  const pkg = readJson(join(base, "package.json"));
  const main = typeof pkg?.main === "string" ? pkg.main : null;
  if (main !== null) {
    const m = resolve(base, main);
    if (isFile(m)) return m;
    for (const e of exts) if (isFile(m + e)) return m + e;
    for (const e of exts) if (isFile(join(m, `index${e}`))) return join(m, `index${e}`);
  }
  for (const e of exts) if (isFile(join(base, `index${e}`))) return join(base, `index${e}`);
  return null;
}

export function addPreloads(out: Found, preloads: string[], ctx: Ctx): void {
  for (const p of preloads) {
    if (!(p.startsWith(".") || p.startsWith("/") || p.startsWith("file:"))) continue;
    const f = withExtensions(resolve(ctx.cwd, p.replace(/^file:\/\//, "")), JS_EXTS, out.wrappers);
    if (f !== null) out.wrappers.push(f);
  }
}

/** Env files above this size are refused (node would read them whole). */
const ENV_FILE_LIMIT = 4 * 1048576;

/**
 * `--env-file` files: each is digested like a wrapper, and its variables go into `out.env`
 * (later files win). Their NODE_OPTIONS is node's unless the environment has its own (node
 * ignores the file's then), and its preloads are wrappers. `parsePreloads` reads NODE_OPTIONS
 * (passed in: tools.ts imports this module). A required file that cannot be read stops node,
 * and is an IdentityError at the top level.
 */
export function addEnvFiles(
  out: Found,
  files: EnvFileArg[],
  ctx: Ctx,
  parsePreloads: (nodeOptions: string) => string[],
): void {
  const vars: Record<string, string> = {};
  for (const f of files) {
    const abs = resolve(ctx.cwd, f.path);
    let text: string;
    try {
      const st = statSync(abs);
      if (!st.isFile()) throw Object.assign(new Error("not a file"), { code: "EISDIR" });
      // Read whole, as node does; a file that large is no env file, and its preloads would go
      // unseen if it were skipped: the launch is refused instead.
      if (st.size > ENV_FILE_LIMIT)
        throw new IdentityError(
          `The env file ${displayPath(abs, ctx.cwd)} is larger than ${ENV_FILE_LIMIT / 1048576} MB; portcullis does not read it.`,
        );
      text = readFileSync(abs, "utf8");
    } catch (e) {
      if (e instanceof IdentityError) throw e;
      if (ctx.strict && !f.optional)
        throw unreadable("env file", abs, ctx.cwd, (e as NodeJS.ErrnoException).code);
      continue;
    }
    out.wrappers.push(abs);
    for (const [k, v] of Object.entries(parseEnvFile(text))) setOwn(vars, k, v);
  }
  for (const [k, v] of Object.entries(vars)) setOwn(out.env, k, v);
  const fileOptions = vars.NODE_OPTIONS;
  if (fileOptions !== undefined && ctx.env.NODE_OPTIONS === undefined)
    addPreloads(out, parsePreloads(fileOptions), ctx);
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
