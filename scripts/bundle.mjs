#!/usr/bin/env node
// The command line as it ships. This first writes dist/ module by module, as tsc would (esbuild,
// each file of src/ transformed alone: no type-checking, which `npm run typecheck` does over src/
// and test/ in one pass; tsc took some 20 s of CPU here to emit what esbuild writes in one), then,
// in dist/cli:
//   cli.js + chunks  src/cli/main.ts as an ES module bundle, one chunk per lazily loaded part:
//                    what serves `demo`
//   gateway.cjs      the same main.ts as one CommonJS file without the other commands: `run`
//   NAME.cjs         the same for each other command (status.cjs, approvals.cjs, …), and
//                    usage.cjs with no command at all (--help, --version, a mistyped command)
//   main.cjs         the `bin`, a few lines that send each command to its file (and main.js, the
//                    entry of earlier builds, an ES module that loads it)
//   gateway.cjs.v8cache, validatorEngine.cjs.v8cache
//                    V8 code caches for the two files a gateway compiles (scripts/codeCache.cjs)
//   preload.js       the egress proxy's preload, which servers load with `--import`
//   validatorEngine.cjs  ajv, its 2020-12 flavour and its formats in one file, and the
//                    meta-schema checks generated from them
// Packages stay outside, imported from node_modules as before (but for one, see gateway.cjs).
//
// Why: a gateway's start loaded 132 modules one by one, and node's ESM loader pays for each
// (resolve, read, link); bundled, `run` loaded 38 files and a warm start was 20–30 ms shorter
// (docs/performance-history.md, "Startup, eighth pass"), and from one CommonJS file it is shorter
// again ("Session nineteen"), as is every other command ("Session thirty"). Everything sits in
// dist/cli, so every path the code computes from its own location (`./main.js`,
// `../../package.json`, `./preload.js`) means the same from a chunk or from gateway.cjs as from the
// module it came from.
//
//   node scripts/bundle.mjs        (run by `npm run build`, after tsc)
import { spawnSync } from "node:child_process";
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, transform } from "esbuild";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const OUT = join(REPO, "dist", "cli");

// dist/ module by module: what the tests and the benches import, and what the steps below
// import to generate code (metaCheckSources). Each file alone, imports as written.
const SRC = join(REPO, "src");
await build({
  entryPoints: readdirSync(SRC, { recursive: true })
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))
    .map((f) => join(SRC, f)),
  outdir: join(REPO, "dist"),
  outbase: SRC,
  bundle: false,
  format: "esm",
  platform: "node",
  target: "node20.19",
  sourcemap: true,
  logLevel: "warning",
});

/** The chunks of an earlier bundle (`name-HASH.js`), so that a rebuild leaves none behind. */
const CHUNK = /^[\w.]+-[A-Z0-9]{8}\.js(\.map)?$/;
for (const f of readdirSync(OUT)) if (CHUNK.test(f)) rmSync(join(OUT, f));

await build({
  entryPoints: {
    cli: join(REPO, "src", "cli", "main.ts"),
    preload: join(REPO, "src", "vault", "egress", "preload.ts"),
  },
  outdir: OUT,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20.19",
  packages: "external",
  chunkNames: "[name]-[hash]",
  sourcemap: true,
  logLevel: "warning",
  allowOverwrite: true,
});

// ajv, its 2020-12 flavour and its formats in one CommonJS file, which the gateway requires when
// it first validates a call (src/catalog/ajvModules.ts says why): node loads one file instead of
// 94. Built from the packages node_modules holds, at the lockfile's versions; `version`
// lets a test see that the bundle is of the installed ajv. `meta`: the check of a schema against
// each dialect's meta-schema as ajv's standalone code, generated here (from tsc's output, with
// ajv from the packages) so that no gateway compiles a meta-schema (src/catalog/metaCheck.ts).
const { metaCheckSources } = await import(join(REPO, "dist", "catalog", "validator.js"));
const metaChecks = Object.entries(metaCheckSources()).map(
  ([dialect, { fingerprint, body }]) =>
    `  ${JSON.stringify(dialect)}: {\n    fingerprint: ${JSON.stringify(fingerprint)},\n` +
    `    make: function (hashedKeywords, linearRegExp) {\n${body}\n    },\n  },`,
);
await build({
  stdin: {
    contents: [
      'exports.ajv = require("ajv");',
      'exports.ajv2020 = require("ajv/dist/2020.js");',
      'exports.formats = require("ajv-formats");',
      'exports.version = require("ajv/package.json").version;',
      "exports.meta = {",
      ...metaChecks,
      "};",
    ].join("\n"),
    resolveDir: REPO,
    sourcefile: "validatorEngine-entry.cjs",
    loader: "js",
  },
  outfile: join(OUT, "validatorEngine.cjs"),
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20.19",
  logLevel: "warning",
  allowOverwrite: true,
});

// Every command but the demo from a CommonJS file of its own: the same src/cli/main.ts, with the
// modules of the other commands left out. Node's ES module loader resolves, reads and links each
// module of the bundle above apart; a CommonJS file is read and compiled once, and the parts a
// command loads only when asked stay functions that run when first required, as esbuild wraps
// lazily imported modules. Measured (docs/performance-history.md, "Session nineteen" and "Session
// thirty"): about 50 ms less CPU to a gateway's first list, 50–70 ms less for a short command
// (`status --json` 180 → 125 ms). One file per command, not one for all: the whole file is parsed
// at every start, and a short command would pay for the gateway's. Packages stay outside but for
// the ES-module-only ones, which `require` cannot load: their files are bundled in, as the lockfile
// installed them. The demo stays in the ES module bundle: it resolves the SDK's ES module files
// for the project it writes (`import.meta.resolve`), which CommonJS cannot ask for.
const ES_MODULE_ONLY = new Set(["canonicalize"]);
const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8"));
const external = Object.keys(pkg.dependencies)
  .filter((d) => !ES_MODULE_ONLY.has(d))
  .flatMap((d) => [d, `${d}/*`]);
/**
 * The files the command line ships, by the module of src/cli that main.ts loads for them, with
 * the command names each serves. `usage.cjs` serves what names no command (`--help`,
 * `--version`, a mistyped name). A command added to main.ts and not named here is sent to
 * usage.cjs, which cannot load it: test/cli/help.test.ts runs every command's --help.
 */
const FILES = {
  run: { file: "gateway.cjs", commands: ["run"] },
  status: { file: "status.cjs", commands: ["status"] },
  catalog: { file: "catalog.cjs", commands: ["catalog"] },
  init: { file: "init.cjs", commands: ["init"] },
  audit: { file: "audit.cjs", commands: ["audit"] },
  passkey: { file: "passkey.cjs", commands: ["passkey"] },
  wrap: { file: "wrap.cjs", commands: ["wrap", "unwrap"] },
  doctor: { file: "doctor.cjs", commands: ["doctor"] },
  console: { file: "console.cjs", commands: ["console"] },
  drill: { file: "drill.cjs", commands: ["drill"] },
  // main.ts loads each of these from a module of its own (./vault.js, ./unlock.js, …)
  vault: {
    file: "vault.cjs",
    commands: ["vault", "unlock", "lock", "__vault-holder"],
    modules: ["vault", "unlock", "lock", "vaultHolder"],
  },
  egress: { file: "egress.cjs", commands: ["egress"] },
  approvals: { file: "approvals.cjs", commands: ["approvals", "approve", "deny", "grants", "revoke"] },
  demo: { file: "cli.js", commands: ["demo"] },
};
const MAIN_TS = join(REPO, "src", "cli", "main.ts");
/** An esbuild plugin: the modules of main.ts's commands but `keep`'s are a throw, not code. */
const leaveOutBut = (keep, file) => {
  // the modules main.ts imports for an entry: its `modules`, else the one named as the entry
  const others = Object.entries(FILES)
    .filter(([m]) => m !== keep)
    .flatMap(([m, { modules }]) => modules ?? [m]);
  const filter = new RegExp(`^\\./(${others.join("|")})\\.js$`);
  return {
    name: "other-commands-left-out",
    setup(b) {
      b.onResolve({ filter }, (args) =>
        args.importer === MAIN_TS ? { path: args.path, namespace: "left-out" } : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: "left-out" }, (args) => ({
        contents: `throw new Error(${JSON.stringify(`portcullis: ${args.path} is not part of ${file}`)});`,
        loader: "js",
      }));
    },
  };
};
const commonJs = (keep, file) =>
  build({
    entryPoints: [MAIN_TS],
    outfile: join(OUT, file),
    bundle: true,
    format: "cjs",
    platform: "node",
    target: "node20.19",
    external,
    // What each module computes from its own location (`./main.js`, `../../package.json`, …) is
    // the same from dist/cli/NAME.cjs as from a chunk beside it.
    define: { "import.meta.url": "__portcullisModuleUrl" },
    banner: {
      js: '"use strict";\nvar __portcullisModuleUrl = require("node:url").pathToFileURL(__filename).href;',
    },
    plugins: [leaveOutBut(keep, file)],
    sourcemap: true,
    logLevel: "warning",
    allowOverwrite: true,
  });
await Promise.all([
  ...Object.entries(FILES)
    .filter(([, { file }]) => file.endsWith(".cjs"))
    .map(([module, { file }]) => commonJs(module, file)),
  commonJs(null, "usage.cjs"),
]);

// Every .cjs file in ASCII where it can be, so that main.js reads it as Latin-1 (see there): node's
// own reader decodes a CommonJS file as UTF-8, which took 15-20 ms of CPU for gateway.cjs
// (1.2 MB) against 3 ms for the same bytes as Latin-1, and hands V8 a two-byte string when one
// character is not ASCII, which compiles slower too (docs/performance-history.md,
// "Session thirty").
// esbuild writes strings, regular expressions and names in ASCII (its `charset` default escapes
// the rest) but for template literals, and leaves comments as they are: a comment's other
// characters become `?`, one per UTF-16 unit so that the source map's columns hold. Checked,
// not assumed: the file with its comments removed must be the same before and after; a file
// where it is not (a template literal with `…`: console.cjs) is left as it was, and main.js reads
// it as node does. test/gateway/startup-order.test.ts holds gateway.cjs to ASCII.
async function asciiOnly(file) {
  const text = readFileSync(file, "utf8");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range itself
  const ascii = text.replace(/[^\u0000-\u007f]/g, "?"); // no `u` flag: one UTF-16 unit at a time
  if (ascii === text) return;
  const code = async (t) => (await transform(t, { loader: "js", minifyWhitespace: true })).code;
  if ((await code(ascii)) === (await code(text))) writeFileSync(file, ascii);
}
await Promise.all(
  readdirSync(OUT)
    .filter((f) => f.endsWith(".cjs"))
    .map((f) => asciiOnly(join(OUT, f))),
);

// Every .cjs file starts as code: they are loaded by main.js, never run as programs, and a `#!`
// line is not JavaScript to the V8 compile that reads a code cache (node strips it itself).
// Replaced by a comment of the same length, so the source map's lines and columns hold.
for (const f of readdirSync(OUT).filter((n) => n.endsWith(".cjs"))) {
  const text = readFileSync(join(OUT, f), "latin1");
  if (text.startsWith("#!")) writeFileSync(join(OUT, f), `//${text.slice(2)}`, "latin1");
}

// V8 code caches for what a gateway compiles at every start (scripts/codeCache.cjs says how):
// its own file and ajv's, loaded under the V8 flag the gateway runs with (GATEWAY_V8_FLAGS, from
// src/cli/gatewayFlags.ts: set by main.cjs before it loads gateway.cjs, and by main.ts for the
// demo's gateways).
// Measured (docs/performance-history.md, "Session thirty-one"): 35-45 ms less CPU to a gateway's
// first answered call. The short commands' files gain nothing measurable from one and have none. A
// cache lives only beside the file it was made from, where the code itself lives: it is code
// the gateway runs, so never in a directory other processes of the user write for it (the
// cache directory, a state directory).
const { GATEWAY_V8_FLAGS } = await import(join(REPO, "dist", "cli", "gatewayFlags.js"));
const cached = spawnSync(
  process.execPath,
  [
    join(REPO, "scripts", "codeCache.cjs"),
    GATEWAY_V8_FLAGS,
    join(OUT, "gateway.cjs"),
    join(OUT, "validatorEngine.cjs"),
  ],
  { stdio: "inherit" },
);
if (cached.status !== 0) throw new Error("scripts/codeCache.cjs failed: see above");

// The `bin`, main.cjs: each command goes to its file, anything else to usage.cjs. CommonJS, since
// node starts an ES module entry through its ES module loader, 15-30 ms of CPU more per process
// (docs/performance-history.md, "Session thirty-one"): every command, every gateway a host starts.
// Every part of the command line spawns itself by it, and `wrap` writes it into a host's
// configuration. main.js, the entry of earlier builds, which hosts configured before it may still
// name, stays: an ES module that loads main.cjs.
const served = Object.fromEntries(
  Object.values(FILES).flatMap(({ file, commands }) => commands.map((c) => [c, file])),
);
/** scripts/entry.cjs with `line` (a declaration of it, as written there) given `value`. */
const filledIn = (text, line, value) => {
  const [declaration] = line.split(" = ");
  if (!text.includes(`${line}\n`)) throw new Error(`scripts/entry.cjs: no line "${line}" to fill in`);
  return text.replace(`${line}\n`, `${declaration} = ${JSON.stringify(value)};\n`);
};
let entry = readFileSync(join(REPO, "scripts", "entry.cjs"), "utf8");
entry = filledIn(entry, "const SERVED = {};", served);
entry = filledIn(entry, 'const GATEWAY_V8_FLAGS = "";', GATEWAY_V8_FLAGS);
writeFileSync(join(OUT, "main.cjs"), entry);
chmodSync(join(OUT, "main.cjs"), 0o755);
writeFileSync(
  join(OUT, "main.js"),
  [
    "#!/usr/bin/env node",
    "// The entry of earlier builds, which hosts configured before main.cjs may still name: main.cjs",
    "// serves every command (scripts/bundle.mjs says why it is CommonJS).",
    'import { createRequire } from "node:module";',
    'createRequire(import.meta.url)("./main.cjs");',
    "",
  ].join("\n"),
);
chmodSync(join(OUT, "main.js"), 0o755);
// tsc's map of main.js describes the module this file replaced
rmSync(join(OUT, "main.js.map"), { force: true });
