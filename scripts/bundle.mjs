#!/usr/bin/env node
// The command line as it ships. `tsc` type-checks and writes dist/ module by module; this then
// writes, in dist/cli:
//   cli.js + chunks  src/cli/main.ts as an ES module bundle, one chunk per lazily loaded part:
//                    every command but `run`
//   gateway.cjs      the same main.ts as one CommonJS file without the other commands: `run`
//   main.js          the `bin`, a few lines that send `run` to gateway.cjs and the rest to cli.js
//   preload.js       the egress proxy's preload, which servers load with `--import`
//   validatorEngine.cjs  ajv, its 2020-12 flavour and its formats in one file, and the
//                    meta-schema checks generated from them
// Packages stay outside, imported from node_modules as before (but for one, see gateway.cjs).
//
// Why: a gateway's start loaded 132 modules one by one, and node's ESM loader pays for each
// (resolve, read, link); bundled, `run` loaded 38 files and a warm start was 20–30 ms shorter
// (docs/performance.md, "Startup, eighth pass"), and from one CommonJS file it is shorter again
// (session nineteen). Everything sits in dist/cli, so every path the code computes from its own
// location (`./main.js`, `../../package.json`, `./preload.js`) means the same from a chunk or
// from gateway.cjs as from the module it came from.
//
//   node scripts/bundle.mjs        (run by `npm run build`, after tsc)
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const OUT = join(REPO, "dist", "cli");

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

// `portcullis run` (a gateway) from one CommonJS file, `gateway.cjs`: the same src/cli/main.ts,
// with the commands other than `run` left out. Node's ES module loader resolves, reads and links
// each module of the bundle above apart; a CommonJS file is read and compiled once, and the parts
// `run` loads only when asked (the gateway's modules after the command line, `--listen`, `--url`)
// stay functions that run when first required, as esbuild wraps lazily imported modules. Measured
// (docs/performance.md, session nineteen): about 50 ms less CPU to a gateway's first list. Not for
// the other commands: the whole file is parsed at every start, which costs a short command such
// as `--help` more than it saves. Packages stay outside but for the ES-module-only ones, which
// `require` cannot load: their files are bundled in, as the lockfile installed them.
const ES_MODULE_ONLY = new Set(["canonicalize"]);
const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8"));
const external = Object.keys(pkg.dependencies)
  .filter((d) => !ES_MODULE_ONLY.has(d))
  .flatMap((d) => [d, `${d}/*`]);
/**
 * The modules of main.ts's other commands: not in the gateway's file (an import of one throws).
 * A command added to main.ts and not named here is only carried along in it, unused.
 */
const OTHER_COMMANDS =
  /^\.\/(status|catalog|init|audit|passkey|demo|wrap|doctor|console|drill|vault|egress|approvals)\.js$/;
const otherCommandsLeftOut = {
  name: "other-commands-left-out",
  setup(b) {
    b.onResolve({ filter: OTHER_COMMANDS }, (args) =>
      args.importer.endsWith(join("src", "cli", "main.ts"))
        ? { path: args.path, namespace: "left-out" }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "left-out" }, (args) => ({
      contents: `throw new Error(${JSON.stringify(`portcullis: ${args.path} is not part of gateway.cjs (only run is)`)});`,
      loader: "js",
    }));
  },
};
await build({
  entryPoints: [join(REPO, "src", "cli", "main.ts")],
  outfile: join(OUT, "gateway.cjs"),
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20.19",
  external,
  // What each module computes from its own location (`./main.js`, `../../package.json`, …) is the
  // same from dist/cli/gateway.cjs as from a chunk beside it.
  define: { "import.meta.url": "__portcullisModuleUrl" },
  banner: {
    js: '"use strict";\nvar __portcullisModuleUrl = require("node:url").pathToFileURL(__filename).href;',
  },
  plugins: [otherCommandsLeftOut],
  sourcemap: true,
  logLevel: "warning",
  allowOverwrite: true,
});

// The `bin`: `run` goes to the CommonJS gateway, every other command to the ES module bundle.
// main.js stays the path every part of the command line spawns itself by (wrap writes it into a
// host's configuration), whichever file serves the command.
writeFileSync(
  join(OUT, "main.js"),
  [
    "#!/usr/bin/env node",
    "// portcullis: `run` from gateway.cjs, the other commands from cli.js (scripts/bundle.mjs says why).",
    'import { createRequire } from "node:module";',
    "",
    'if (process.argv[2] === "run") createRequire(import.meta.url)("./gateway.cjs");',
    'else await import("./cli.js");',
    "",
  ].join("\n"),
);
chmodSync(join(OUT, "main.js"), 0o755);
// tsc's map of main.js describes the module this file replaced
rmSync(join(OUT, "main.js.map"), { force: true });
