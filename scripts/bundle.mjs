#!/usr/bin/env node
// The command line as it ships: `tsc` type-checks and writes dist/ module by module; this then
// bundles src/cli/main.ts into dist/cli/main.js (the `bin`), with one chunk per lazily loaded part
// (`portcullis run` loads the gateway only after its command line, `--listen` its HTTP front only
// when asked, and so on). Packages stay outside, imported from node_modules as before.
//
// Why: a gateway's start loaded 132 modules one by one, and node's ESM loader pays for each
// (resolve, read, link); bundled, `run` loads 38 files and a warm start is 20–30 ms shorter
// (docs/performance.md, "Startup, eighth pass"). The chunks sit beside main.js in dist/cli, so
// every path the code computes from its own location (`./main.js`, `../../package.json`,
// `./preload.js`) means the same from a chunk as from the module it came from; the egress
// proxy's preload, which servers load with `--import`, is an entry of its own for that reason.
//
//   node scripts/bundle.mjs        (run by `npm run build`, after tsc)
import { readdirSync, rmSync } from "node:fs";
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
    main: join(REPO, "src", "cli", "main.ts"),
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
// lets a test see that the bundle is of the installed ajv.
await build({
  stdin: {
    contents: [
      'exports.ajv = require("ajv");',
      'exports.ajv2020 = require("ajv/dist/2020.js");',
      'exports.formats = require("ajv-formats");',
      'exports.version = require("ajv/package.json").version;',
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
