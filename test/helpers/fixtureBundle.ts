// The Node fixture servers, each bundled with what it imports (the SDK and its dependencies) into
// one file in a directory outside the repository, so a test's gateway identifies a fixture the
// way it would a small self-contained server: by one file, with no dependency tree.
//
// Why: run from test/fixtures/servers/, a fixture's dependency tree is this repository's
// node_modules (about 7,800 files), which a gateway checks file by file at every start, warm
// cache or not: about 0.2 s of CPU per gateway, most of what the suite spends on a start (a warm
// start of the echo fixture took 511-650 ms of gateway CPU from the repository and 328-350 ms
// from a directory of its own). What that check costs a user is measured in bench/startup, and
// the tests that are about dependency trees build projects of their own (project.ts, linked).
//
// The directory's name is a digest of the fixtures' sources, the lockfile and this file, so a
// changed fixture, dependency or way of bundling gets a new bundle, and parallel test processes
// agree on the path without talking. test/globalSetup.ts builds it before any test file runs.
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Every Node fixture server of `servers` (lib.mjs is their shared helper, bundled into each). */
function fixtureServers(servers: string): string[] {
  return readdirSync(servers)
    .filter((f) => f.endsWith(".mjs") && f !== "lib.mjs")
    .map((f) => f.slice(0, -".mjs".length));
}

/** Bundles older than this, of other sources, are removed when a new one is built (2.7 MB each). */
const STALE_MS = 24 * 3600 * 1000;

const DONE = ".complete";
const BUNDLE_PREFIX = "portcullis-test-fixtures-";

/** The bundle directory for the current sources (it may not be built yet). */
export function fixtureBundleDir(repo: string): string {
  const h = createHash("sha256");
  const servers = join(repo, "test", "fixtures", "servers");
  for (const f of readdirSync(servers).sort()) {
    if (!f.endsWith(".mjs")) continue;
    h.update(f)
      .update("\0")
      .update(readFileSync(join(servers, f)))
      .update("\0");
  }
  h.update(readFileSync(join(repo, "package-lock.json")));
  h.update(readFileSync(fileURLToPath(import.meta.url))); // how they are bundled
  h.update(process.version);
  return join(tmpdir(), `${BUNDLE_PREFIX}${h.digest("hex").slice(0, 16)}`);
}

/** The bundled file of `name`, or null when the bundle is not built (then use the source). */
export function bundledFixture(repo: string, name: string): string | null {
  const dir = fixtureBundleDir(repo);
  return existsSync(join(dir, DONE)) ? join(dir, `${name}.mjs`) : null;
}

/** Builds the bundle unless it is there; safe when several processes race (write, then rename). */
export async function buildFixtureBundle(repo: string): Promise<string> {
  const dir = fixtureBundleDir(repo);
  if (existsSync(join(dir, DONE))) return dir;
  const { build } = await import("esbuild");
  const work = `${dir}.${process.pid}.tmp`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const servers = join(repo, "test", "fixtures", "servers");
  await build({
    entryPoints: Object.fromEntries(fixtureServers(servers).map((n) => [n, join(servers, `${n}.mjs`)])),
    outdir: work,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20.19",
    // CommonJS dependencies (ajv, …) call require(): give the bundle one
    banner: {
      js: 'import { createRequire as __fixtureRequire } from "node:module"; const require = __fixtureRequire(import.meta.url);',
    },
    logLevel: "warning",
  });
  writeFileSync(join(work, DONE), "");
  try {
    renameSync(work, dir);
  } catch {
    rmSync(work, { recursive: true, force: true }); // another process finished first
  }
  removeStaleBundles(dir);
  return dir;
}

/** Removes the bundles of earlier sources untouched for a day (a checkout's run may still use a recent one). */
function removeStaleBundles(current: string): void {
  const parent = dirname(current);
  const now = Date.now();
  for (const name of readdirSync(parent)) {
    const path = join(parent, name);
    if (!name.startsWith(BUNDLE_PREFIX) || path === current) continue;
    try {
      if (now - statSync(path).mtimeMs > STALE_MS) rmSync(path, { recursive: true, force: true });
    } catch {
      /* removed meanwhile */
    }
  }
}
