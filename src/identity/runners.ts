// Package runners: npx / npm exec / pnpm dlx / bunx find a package's bin in node_modules; npm,
// pnpm and yarn run package.json scripts; uv run starts a command in the project's virtualenv.
import { delimiter, dirname, join, resolve } from "node:path";
import { type Ctx, type Found, merge } from "./context.js";
import { findScript, pythonModule } from "./entry.js";
import { findUp, isDir, isFile, readJson, realpathOr, which } from "./files.js";
import { scanOptions } from "./options.js";
import { scanShellText } from "./shell.js";
import { quoteWord } from "./shellWords.js";
import { toolOf } from "./tools.js";

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

// Only `--package=name` is read with `=`: `-p=x` and `-c=x` are not taken for -p and -c.
const NPX_OPTIONS = { valued: new Set(["-p", "--package"]) };

/** npx / npm exec / pnpm dlx / bunx: the package's bin, found in node_modules upward from cwd. */
export function npxLike(args: string[], out: Found, ctx: Ctx, sub: Ctx): Found {
  let pkg: string | null = null;
  const end = scanOptions(args, NPX_OPTIONS, (name, value) => {
    if (name === "-p" || name === "--package") pkg = value ?? null;
    else if (name.startsWith("--package=")) pkg = name.slice("--package=".length);
    return name === "-c" || name === "--call";
  });
  if (end.kind === "stopped") {
    const text = args[end.at + 1] ?? "";
    merge(out, scanShellText(text, withBinPath({ ...sub, scriptDir: ctx.cwd }, ctx.cwd), null));
    return out;
  }
  const spec = args[end.at];
  if (spec === undefined) return out;
  const rest = args.slice(end.at + 1);
  const bin = resolveBin(spec, ctx.cwd, pkg !== null);
  if (bin === null) return out;
  const inner = ctx.resolve([bin.path, ...rest], withBinPath(sub, ctx.cwd), bin.name);
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
export function packageScript(name: string, extra: string[], out: Found, ctx: Ctx, sub: Ctx): boolean {
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

const PM_DIR = new Set(["--prefix", "-C", "--dir", "--cwd"]);
// A `--` before the command is skipped like an option: `npm -- start` still runs start.
const PM_OPTIONS = {
  valued: new Set([...PM_DIR, "-w", "--workspace", "--filter", "-F"]),
  inline: true,
  dashDash: false,
};

export function packageManager(
  tool: "npm" | "pnpm" | "yarn",
  args: string[],
  out: Found,
  ctx: Ctx,
  sub: Ctx,
): Found {
  let dir = ctx.cwd;
  const end = scanOptions(args, PM_OPTIONS, (name, value) => {
    if (value !== undefined && PM_DIR.has(name)) dir = resolve(ctx.cwd, value);
    return false;
  });
  const here = { ...ctx, cwd: dir };
  const subHere = { ...sub, cwd: dir };
  const cmd = args[end.at];
  if (cmd === undefined) return out;
  const rest = args.slice(end.at + 1);
  if (cmd === "exec" || cmd === "x" || cmd === "dlx") {
    if (tool !== "npm" && cmd === "exec" && rest.length > 0) {
      merge(out, ctx.resolve(rest, withBinPath(subHere, dir)));
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

export function uvRun(args: string[], out: Found, ctx: Ctx, sub: Ctx): Found {
  if (args[0] !== "run") return out;
  let project = ctx.cwd;
  let module = false;
  const end = scanOptions(
    args,
    { valued: UV_VALUE, inline: true },
    (name, value) => {
      if (name === "-m" || name === "--module") module = true;
      if (value !== undefined && (name === "--project" || name === "--directory"))
        project = resolve(ctx.cwd, value);
      return false;
    },
    1,
  );
  const rest = args.slice(end.at);
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
  const inner = ctx.resolve(rest, { ...sub, path: [venvBin, ctx.path].join(delimiter) });
  merge(out, inner);
  return out;
}
