// Speed of execution-identity capture against sha256sum over the same files.
//
//   npx tsc -p tsconfig.json && node bench/identity.mjs
//
// Builds (once) a synthetic server project under .bench-tmp/identity whose node_modules holds
// ~20,000 files of realistic sizes, then, in interleaved rounds:
//   (a) sha256sum over exactly the files a capture digests (node_modules, entry, lockfile, node),
//   (b) a cold captureStaticIdentity (new, empty cache file; OS page cache left alone),
//   (b') the same with hashing on the calling thread only (PORTCULLIS_HASH_THREADS=0),
//   (c) a warm capture (new DigestCache loading the file (b) wrote; nothing changed), which
//       keeps the tree's summary, and (c') a second one, which takes it (docs/identity.md),
//   and, for reference, a bare loop of one lstat per file and directory of node_modules: the floor of
//   any warm check that notices an in-place write.
// Medians are reported; ratios are of medians. Env: BENCH_ROUNDS (default 5), BENCH_FILES.
import { execFileSync } from "node:child_process";
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { availableParallelism, cpus, loadavg, platform, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..");
let lib;
try {
  lib = await import(join(repo, "dist/identity/index.js"));
} catch (e) {
  console.error(`Build first (npx tsc -p tsconfig.json): ${e.message}`);
  process.exit(2);
}
const { DigestCache, captureStaticIdentity } = lib;

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TARGET_FILES = Number(process.env.BENCH_FILES ?? 20000);
const SPEC_VERSION = `v1-${TARGET_FILES}`;
const base = join(repo, ".bench-tmp", "identity");
const project = join(base, "server");
const marker = join(base, "READY");

// ---------------------------------------------------------------------------------------------
// Synthetic project (deterministic)

function generate() {
  rmSync(base, { recursive: true, force: true });
  mkdirSync(join(project, "dist"), { recursive: true });
  let seed = 0x2545f491;
  const rnd = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 0x100000000;
  };
  const pool = Buffer.alloc(2 << 20);
  const alphabet = "abcdefghijklmnopqrstuvwxyz(){};=.,'\"\n\t ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$";
  for (let i = 0; i < pool.length; i++) pool[i] = alphabet.charCodeAt(Math.floor(rnd() * alphabet.length));
  // Mostly 0.5–8 KB; 4 % 16–128 KB; 1 % 256 KB–1 MB.
  const size = () => {
    const r = rnd();
    if (r < 0.95) return 512 + Math.floor(rnd() * 7680);
    if (r < 0.99) return 16384 + Math.floor(rnd() * 114688);
    return 262144 + Math.floor(rnd() * 786432);
  };
  const nm = join(project, "node_modules");
  mkdirSync(join(nm, ".bin"), { recursive: true });
  let files = 0;
  let bytes = 0;
  const write = (p, n) => {
    mkdirSync(dirname(p), { recursive: true });
    const off = Math.floor(rnd() * (pool.length - n));
    writeFileSync(p, pool.subarray(off, off + n));
    files++;
    bytes += n;
  };
  const subdirs = ["", "lib/", "dist/", "dist/esm/", "dist/cjs/", "src/", "types/", "lib/internal/"];
  for (let p = 0; files < TARGET_FILES; p++) {
    const name = rnd() < 0.2 ? `@scope${p % 23}/pkg-${p}` : `pkg-${p}`;
    const dir = join(nm, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({ name, version: `1.${p % 10}.0`, main: "lib/index.js" }),
    );
    files++;
    const n = 10 + Math.floor(rnd() * 90);
    for (let i = 0; i < n && files < TARGET_FILES; i++) {
      const sub = subdirs[Math.floor(rnd() * subdirs.length)];
      write(join(dir, `${sub}file${i}.js`), size());
    }
    if (p % 40 === 0) symlinkSync(`../${name}/lib/index.js`, join(nm, ".bin", `bin-${p}`));
  }
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "bench-server", version: "1.0.0" }));
  writeFileSync(join(project, "package-lock.json"), JSON.stringify({ lockfileVersion: 3, packages: {} }));
  writeFileSync(join(project, "dist", "server.js"), "process.stdin.resume();\n".repeat(200));
  writeFileSync(marker, JSON.stringify({ spec: SPEC_VERSION, files, bytes }));
}

let facts;
try {
  facts = JSON.parse(readFileSync(marker, "utf8"));
  if (facts.spec !== SPEC_VERSION) throw new Error("stale");
} catch {
  process.stderr.write("generating the synthetic project…\n");
  generate();
  facts = JSON.parse(readFileSync(marker, "utf8"));
}
// The cache does not keep digests of files modified in the last 2 s (a write within the same
// timestamp tick could go unseen). A real dependency tree is older than that: let it age.
const age = Date.now() - statSync(marker).mtimeMs;
if (age < 2500) await new Promise((r) => setTimeout(r, 2500 - age));

const nodeExe = realpathSync(process.execPath);
const spec = {
  serverLabel: "bench",
  command: nodeExe,
  args: ["dist/server.js"],
  cwd: project,
  env: { PATH: process.env.PATH ?? "/usr/bin:/bin", NODE_ENV: "production" },
  configDigest: "sha256:bench",
};

// ---------------------------------------------------------------------------------------------
// Measurements

const cacheFile = join(base, "digest-cache.bin");
const sec = () => performance.now() / 1000;

// Each measure returns [wall seconds, CPU seconds (user + system, all threads / child processes)].
// On a shared machine wall time depends on the neighbours; CPU time much less.
function sha256sum() {
  const t = sec();
  const out = execFileSync(
    "sh",
    [
      "-c",
      `{ find node_modules -type f -print0; printf '%s\\0' dist/server.js package-lock.json "$1"; } | xargs -0 sha256sum > /dev/null; times`,
      "sh",
      nodeExe,
    ],
    { cwd: project, stdio: ["ignore", "pipe", "inherit"] },
  ).toString();
  const wall = sec() - t;
  // `times`: shell user/sys, then children user/sys, as 0m0.123s.
  const secs = [...out.matchAll(/(\d+)m([\d.]+)s/g)].map((x) => Number(x[1]) * 60 + Number(x[2]));
  return [wall, secs.reduce((a, b) => a + b, 0)];
}

async function capture(fresh, threads) {
  if (fresh) {
    // the main file and the tree listings' files beside it: a cold capture starts from nothing
    rmSync(cacheFile, { force: true });
    rmSync(cacheFile.replace(/\.bin$/, ".trees"), { recursive: true, force: true });
  }
  const prev = process.env.PORTCULLIS_HASH_THREADS;
  if (threads !== undefined) process.env.PORTCULLIS_HASH_THREADS = String(threads);
  const cpu = process.cpuUsage();
  const t = sec();
  const cache = new DigestCache(cacheFile);
  const s = await captureStaticIdentity(spec, cache);
  const dt = sec() - t;
  const used = process.cpuUsage(cpu);
  if (prev === undefined) delete process.env.PORTCULLIS_HASH_THREADS;
  else process.env.PORTCULLIS_HASH_THREADS = prev;
  return { dt: [dt, (used.user + used.system) / 1e6], s };
}

// The floor of any warm check that notices in-place edits: one lstat per file and directory.
const everything = [];
(function list(dir) {
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    everything.push(p);
    if (d.isDirectory()) list(p);
  }
})(join(project, "node_modules"));
function lstatFloor() {
  const cpu = process.cpuUsage();
  const t = sec();
  for (const p of everything) lstatSync(p);
  const used = process.cpuUsage(cpu);
  return [sec() - t, (used.user + used.system) / 1e6];
}

const rows = { sha256sum: [], cold: [], cold1: [], warm: [], warm2: [], floor: [] };
let reference = null;
for (let r = 0; r < ROUNDS; r++) {
  rows.sha256sum.push(sha256sum());
  const c1 = await capture(true, 0);
  rows.cold1.push(c1.dt);
  const c = await capture(true);
  rows.cold.push(c.dt);
  const w = await capture(false);
  rows.warm.push(w.dt);
  const w2 = await capture(false);
  rows.warm2.push(w2.dt);
  rows.floor.push(lstatFloor());
  const digest = JSON.stringify([c.s.dependencyTree, c.s.entry, c.s.executable, c.s.lockfile]);
  for (const x of [w, w2])
    if (digest !== JSON.stringify([x.s.dependencyTree, x.s.entry, x.s.executable, x.s.lockfile])) {
      throw new Error("warm capture disagrees with cold capture");
    }
  if (digest !== JSON.stringify([c1.s.dependencyTree, c1.s.entry, c1.s.executable, c1.s.lockfile])) {
    throw new Error("single-thread capture disagrees with pooled capture");
  }
  reference ??= c.s;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const wall = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, median(v.map((x) => x[0]))]));
const cpu = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, median(v.map((x) => x[1]))]));
const fmt = (x) => x.toFixed(3).padStart(9);
const exeBytes = statSync(nodeExe).size;

console.log(
  `machine: ${availableParallelism()} cpus (${cpus()[0]?.model ?? "?"}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ` +
    `${platform()}, node ${process.version}, load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
);
console.log(
  `tree: ${reference.dependencyTree.files} files, ${(facts.bytes / 1e6).toFixed(1)} MB in node_modules; ` +
    `plus entry, lockfile and the node executable (${(exeBytes / 1e6).toFixed(1)} MB); ${ROUNDS} rounds, medians`,
);
console.log("");
console.log(`${"measure".padEnd(42)}  wall s    min wall    CPU s`);
const line = (label, k) =>
  console.log(
    `${label.padEnd(42)}${fmt(wall[k])}${fmt(Math.min(...rows[k].map((x) => x[0])))}${fmt(cpu[k])}`,
  );
line("(a) sha256sum, same files", "sha256sum");
line("(b) cold capture (empty cache)", "cold");
line("    cold, calling thread only", "cold1");
line("(c) warm capture (nothing changed)", "warm");
line("(c') warm again (the tree's summary)", "warm2");
line(`    lstat of each of the ${everything.length} entries`, "floor");
console.log("");
console.log(`${"ratio".padEnd(42)}     wall      CPU   target`);
const ratio = (label, a, b, target, ok) =>
  console.log(
    `${label.padEnd(42)}${fmt(wall[a] / wall[b])}${fmt(cpu[a] / cpu[b])}   ${target}${
      ok === undefined ? "" : ok(wall[a] / wall[b]) ? "  met (wall)" : "  NOT met (wall)"
    }`,
  );
ratio("cold / sha256sum", "cold", "sha256sum", "<= 1.3", (x) => x <= 1.3);
ratio("warm / cold", "warm", "cold", "<  0.1", (x) => x < 0.1);
ratio("warm / lstat floor", "warm", "floor", "(a warm check must lstat every file)");
ratio("warm again / lstat floor", "warm2", "floor", "");
