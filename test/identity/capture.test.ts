import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childShas, MAX_TREE_FILES } from "../../src/identity/cache.js";
import {
  captureStaticIdentity,
  changedParts,
  DigestCache,
  finishRecord,
  IdentityError,
  type ProcessFact,
  type StaticIdentity,
  watchedPaths,
} from "../../src/identity/index.js";
import {
  AGE_MS,
  makeProject,
  NODE,
  put,
  removeDir,
  sha256File,
  sleep,
  specFor,
  tempDir,
} from "./fixtures.js";

const live = (epoch = "01EPOCHA", pid = 100, processes: ProcessFact[] = []) => ({
  epoch,
  processId: pid,
  startedAt: "2026-01-01T00:00:00.000Z",
  processes,
});

/** Same size, different bytes: the cache key can only see it through mtime/ctime/inode. */
function rewriteSameSize(p: string): void {
  const old = readFileSync(p, "utf8");
  const next = old.replace(/\d/, (d) => String((Number(d) + 1) % 10));
  expect(next).not.toBe(old);
  expect(next.length).toBe(old.length);
  writeFileSync(p, next);
}

describe("captureStaticIdentity", () => {
  let root: string;
  // Projects whose files are older than the cache's racy window, so the cache really holds them.
  const aged: Record<string, string> = {};

  beforeAll(async () => {
    root = tempDir("capture");
    for (const name of [
      "entry",
      "tree",
      "roundtrip",
      "ctime",
      "corrupt",
      "sharedA",
      "sharedB",
      "bounded",
      "rewrite",
      "empty",
      "nmLink",
    ]) {
      aged[name] = makeProject(join(root, name));
    }
    // a node_modules that is a symlink to the install elsewhere (a shared or mounted one)
    renameSync(join(aged.nmLink!, "node_modules"), join(root, "nmLink-install"));
    symlinkSync(join(root, "nmLink-install"), join(aged.nmLink!, "node_modules"));
    await sleep(AGE_MS);
  });
  afterAll(() => removeDir(root));

  it("digests the entry by content: a content change shows, an mtime-only change does not", async () => {
    const dir = aged.entry!;
    const cache = new DigestCache(join(root, "entry-cache.bin"));
    const spec = specFor(dir, "node", ["dist/server.js"]);
    const a = await captureStaticIdentity(spec, cache);
    expect(a.entry).toEqual({ path: "dist/server.js", sha256: sha256File(join(dir, "dist/server.js")) });
    expect(a.executable?.path).toBe(NODE);
    expect(a.executable?.sha256).toBe(sha256File(NODE));
    expect(a.runtime).toBe(`node ${process.versions.node}`);
    expect(a.lockfile?.path).toBe("package-lock.json");

    const entry = join(dir, "dist/server.js");
    const later = new Date(Date.now() - 3_600_000);
    utimesSync(entry, later, later);
    const b = await captureStaticIdentity(spec, cache);
    expect(b.entry).toEqual(a.entry);

    writeFileSync(entry, "// demo server, rebuilt\nprocess.stdin.resume();\n");
    const c = await captureStaticIdentity(spec, cache);
    expect(c.entry?.path).toBe("dist/server.js");
    expect(c.entry?.sha256).toBe(sha256File(entry));
    expect(c.entry?.sha256).not.toBe(a.entry?.sha256);
    expect(changedParts(a, c)).toEqual(["entry dist/server.js"]);
  });

  it("a changed file inside node_modules changes dependencyTree and identityDigest, not the entry", async () => {
    const dir = aged.tree!;
    const cache = new DigestCache(join(root, "tree-cache.bin"));
    const spec = specFor(dir, "node", ["dist/server.js"]);
    const a = await captureStaticIdentity(spec, cache);
    expect(a.dependencyTree?.root).toBe("node_modules");
    // pkg/package.json, pkg/index.js, pkg/lib/util.js, @scope/deep/{package.json,dist/esm/index.js},
    // .package-lock.json, .bin/pkg (a symlink, digested as its target text)
    expect(a.dependencyTree?.files).toBe(7);

    rewriteSameSize(join(dir, "node_modules/pkg/lib/util.js"));
    const b = await captureStaticIdentity(spec, cache);
    expect(b.entry).toEqual(a.entry);
    expect(b.dependencyTree?.files).toBe(7);
    expect(b.dependencyTree?.sha256).not.toBe(a.dependencyTree?.sha256);
    expect(finishRecord(b, live()).identityDigest).not.toBe(finishRecord(a, live()).identityDigest);
    expect(changedParts(a, b)).toEqual(["dependency tree node_modules (7 files)"]);
  });

  it("gives the same digests after a cache round-trip, and the round-trip cache is actually used", async () => {
    const dir = aged.roundtrip!;
    const file = join(root, "roundtrip-cache.bin");
    const spec = specFor(dir, "node", ["dist/server.js"]);
    const first = new DigestCache(file);
    const a = await captureStaticIdentity(spec, first);
    expect(statSync(file).size).toBeGreaterThan(0);

    const second = new DigestCache(file);
    expect(second.loadProblem).toBeNull();
    expect(second.size).toBeGreaterThan(0); // executable, entry, lockfile held as single files
    const b = await captureStaticIdentity(spec, second);
    expect(b).toEqual(a);
    const fresh = await captureStaticIdentity(spec, new DigestCache(null));
    expect(fresh).toEqual(a);

    // A symlink is its target text: retargeting it changes the tree although no content changed.
    symlinkSync("../pkg/lib/util.js", join(dir, "node_modules/.bin/other"));
    const c = await captureStaticIdentity(spec, new DigestCache(file));
    expect(c.dependencyTree?.files).toBe(8);
    expect(c.dependencyTree?.sha256).not.toBe(a.dependencyTree?.sha256);
  });

  it("keeps each tree's listings in a file of its own, and a warm capture reads only its own", async () => {
    const [a, b] = [aged.sharedA!, aged.sharedB!];
    const file = join(root, "shared-cache.bin");
    const specA = specFor(a, "node", ["dist/server.js"]);
    const specB = specFor(b, "node", ["dist/server.js"]);
    const first = await captureStaticIdentity(specA, new DigestCache(file));
    await captureStaticIdentity(specB, new DigestCache(file));
    const cache = new DigestCache(file);
    const treeA = cache.treeFile(join(a, "node_modules"))!;
    const treeB = cache.treeFile(join(b, "node_modules"))!;
    expect(treeA).not.toBe(treeB);
    expect(existsSync(treeA) && existsSync(treeB)).toBe(true);
    const bytesA = readFileSync(treeA);
    // B's listings gone: A's warm capture neither reads nor rewrites anything of B's, nor its own
    rmSync(treeB);
    expect(await captureStaticIdentity(specA, cache)).toEqual(first);
    expect(existsSync(treeB)).toBe(false);
    expect(readFileSync(treeA)).toEqual(bytesA);
    // and a change inside A's tree is still seen through its own listings
    rewriteSameSize(join(a, "node_modules/pkg/lib/util.js"));
    const changed = await captureStaticIdentity(specA, new DigestCache(file));
    expect(changed.dependencyTree?.sha256).not.toBe(first.dependencyTree?.sha256);
    expect(changed).toEqual(await captureStaticIdentity(specA, new DigestCache(null)));
    // a damaged listing file: that tree is walked afresh, and its file written again
    const good = readFileSync(treeA);
    writeFileSync(treeA, good.subarray(0, good.length - 9));
    expect(await captureStaticIdentity(specA, new DigestCache(file))).toEqual(changed);
    expect(readFileSync(treeA).length).toBeGreaterThan(good.length - 9);
  });

  it("keeps at most MAX_TREE_FILES listing files, removing the least recently written", async () => {
    const dir = aged.bounded!;
    const file = join(root, "bounded-cache.bin");
    const cache = new DigestCache(file);
    const own = cache.treeFile(join(dir, "node_modules"))!;
    const trees = dirname(own);
    mkdirSync(trees, { recursive: true });
    const extra = 5;
    const others = Array.from({ length: MAX_TREE_FILES + extra }, (_, i) => {
      const f = join(trees, `${String(i).padStart(32, "0")}.bin`);
      writeFileSync(f, "another tree");
      utimesSync(f, 1_600_000_000 + i * 86_400, 1_600_000_000 + i * 86_400); // file i is i days older than i+1
      return f;
    });
    await captureStaticIdentity(specFor(dir, "node", ["dist/server.js"]), cache);
    expect(existsSync(own)).toBe(true);
    expect(readdirSync(trees).filter((n) => n.endsWith(".bin"))).toHaveLength(MAX_TREE_FILES);
    // the oldest went (the new file of this tree counts too), the newest stayed
    expect(others.slice(0, extra + 1).some((f) => existsSync(f))).toBe(false);
    expect(others.slice(extra + 1).every((f) => existsSync(f))).toBe(true);
  });

  it("lets go of its entries once saved, and reads them again from the file for the next capture", async () => {
    const dir = aged.roundtrip!;
    const file = join(root, "release-cache.bin");
    const spec = specFor(dir, "node", ["dist/server.js"]);
    const cache = new DigestCache(file);
    const a = await captureStaticIdentity(spec, cache);
    expect(cache.save()).toBe(true);
    const held = cache.size;
    expect(held).toBeGreaterThan(0);
    expect(cache.release()).toBe(true);
    expect(cache.size).toBe(held); // read again from the file, not recomputed
    expect(await captureStaticIdentity(spec, cache)).toEqual(a);
    // Nowhere to read them again from: kept.
    const unsaved = new DigestCache(null);
    await captureStaticIdentity(spec, unsaved);
    expect(unsaved.release()).toBe(false);
    expect(unsaved.size).toBeGreaterThan(0);
  });

  it("writes its files again only when a capture changed what they hold", async () => {
    const dir = aged.rewrite!;
    const file = join(root, "rewrite-cache.bin");
    const spec = specFor(dir, "node", ["dist/server.js"]);
    const a = await captureStaticIdentity(spec, new DigestCache(file));
    // The first warm capture finds every entry as listed and keeps the tree's summary (a write
    // of the main file, once: a later warm start takes the digest from it).
    expect(await captureStaticIdentity(spec, new DigestCache(file))).toEqual(a);
    const stamp = (p: string) => {
      const st = statSync(p);
      return `${st.ino}:${st.mtimeMs}`;
    };
    const trees = `${file.replace(/\.bin$/, "")}.trees`;
    const before = [file, ...readdirSync(trees).map((f) => join(trees, f))].map(stamp);
    // A warm capture hashes the server's own files again (entry, lockfile): the same bytes under
    // the same key are no change, so no file is written (a write is a rename: a new inode).
    expect(await captureStaticIdentity(spec, new DigestCache(file))).toEqual(a);
    expect([file, ...readdirSync(trees).map((f) => join(trees, f))].map(stamp)).toEqual(before);
    // The entry rewritten: the file is written again (with the entry left out of it: too recent a
    // change to key on, RACY_MS).
    put(dir, "dist/server.js", "console.log('revision two');\n");
    const b = await captureStaticIdentity(spec, new DigestCache(file));
    expect(b.entry?.sha256).not.toBe(a.entry?.sha256);
    expect(stamp(file)).not.toBe(before[0]);
  });

  it("reads back the listings of a tree with empty directories in it", async () => {
    const dir = aged.empty!;
    const file = join(root, "empty-cache.bin");
    const spec = specFor(dir, "node", ["dist/server.js"]);
    const nm = join(dir, "node_modules");
    // empty directories first, between and last in the walk's order
    mkdirSync(join(nm, "@aaa"), { recursive: true });
    mkdirSync(join(nm, "pkg/lib/empty"), { recursive: true });
    mkdirSync(join(nm, "zzz"), { recursive: true });
    await sleep(AGE_MS);
    const a = await captureStaticIdentity(spec, new DigestCache(file));
    const cache = new DigestCache(file);
    const listings = cache.listings(nm);
    expect(listings.dirs.get(join(nm, "pkg/lib/empty"))?.names).toEqual([]);
    const lib = listings.dirs.get(join(nm, "pkg/lib"));
    expect(lib !== undefined && childShas(lib).some((s) => s !== "")).toBe(true);
    // warm: nothing walked afresh or hashed again, so nothing written
    const tree = cache.treeFile(nm)!;
    const before = statSync(tree).ino;
    expect(await captureStaticIdentity(spec, cache)).toEqual(a);
    expect(statSync(tree).ino).toBe(before);
  });

  it("a node_modules that is a symlink: a package added to it is in the next warm capture", async () => {
    const dir = aged.nmLink!;
    const file = join(root, "nmlink-cache.bin");
    const spec = specFor(dir, "node", ["dist/server.js"]);
    const a = await captureStaticIdentity(spec, new DigestCache(file));
    expect(a.dependencyTree?.files).toBe(7);
    put(root, "nmLink-install/added/index.js", "module.exports = 'new';\n");
    await sleep(AGE_MS); // out of the racy window, so the cache would answer for it
    const b = await captureStaticIdentity(spec, new DigestCache(file));
    expect(b.dependencyTree?.files).toBe(8);
    expect(b).toEqual(await captureStaticIdentity(spec, new DigestCache(null)));
  });

  it("keys the cache on ctime too: a same-size rewrite with the old mtime put back is still seen", async () => {
    const dir = aged.ctime!;
    const cache = new DigestCache(null);
    const spec = specFor(dir, "node", ["dist/server.js"]);
    const util = join(dir, "node_modules/pkg/lib/util.js");
    const a = await captureStaticIdentity(spec, cache);
    const before = statSync(util, { bigint: true });
    // `touch -r` copies timestamps with full (nanosecond) precision, which utimes cannot.
    const stamp = join(dir, "stamp");
    writeFileSync(stamp, "");
    execFileSync("touch", ["-r", util, stamp]);
    rewriteSameSize(util);
    execFileSync("touch", ["-r", stamp, util]);
    const after = statSync(util, { bigint: true });
    expect(after.mtimeNs).toBe(before.mtimeNs);
    expect(after.size).toBe(before.size);
    expect(after.ino).toBe(before.ino);
    const b = await captureStaticIdentity(spec, cache);
    expect(b.dependencyTree?.sha256).not.toBe(a.dependencyTree?.sha256);
  });

  it("ignores a corrupt or truncated cache file and starts empty", async () => {
    const dir = aged.corrupt!;
    const file = join(root, "corrupt-cache.bin");
    const spec = specFor(dir, "node", ["dist/server.js"]);
    const truth = await captureStaticIdentity(spec, new DigestCache(null));

    writeFileSync(file, "this is not a digest cache, but it is long enough to look like one at first glance");
    const garbage = new DigestCache(file);
    expect(garbage.size).toBe(0);
    expect(garbage.loadProblem).toMatch(/corrupt/);
    expect(await captureStaticIdentity(spec, garbage)).toEqual(truth);

    // The capture rewrote a valid file; now cut it short.
    const good = new DigestCache(file);
    expect(good.loadProblem).toBeNull();
    expect(good.size).toBeGreaterThan(0);
    truncateSync(file, statSync(file).size - 7);
    const cut = new DigestCache(file);
    expect(cut.size).toBe(0);
    expect(cut.loadProblem).toMatch(/corrupt/);
    expect(await captureStaticIdentity(spec, cut)).toEqual(truth);
  });

  it("reads a file of the earlier layout (version 3, an entry's fields one after another) as an empty cache, and writes its own", async () => {
    const dir = aged.corrupt!;
    const file = join(root, "v3-cache.bin");
    const spec = specFor(dir, "node", ["dist/server.js"]);
    const truth = await captureStaticIdentity(spec, new DigestCache(null));
    // MAGIC, version 3, one file and no metadata; the entry; then the body's SHA-256
    const path = "/usr/bin/env";
    const body = Buffer.alloc(16 + 2 + path.length + 32 + 32);
    let at = body.writeUInt32LE(0x43444350, 0);
    at = body.writeUInt32LE(3, at);
    at = body.writeUInt32LE(1, at);
    at = body.writeUInt32LE(0, at);
    at = body.writeUInt16LE(path.length, at);
    at += body.write(path, at, "utf8");
    for (const v of [1, 2, 3, 4]) at = body.writeDoubleLE(v, at);
    body.fill(0xab, at);
    writeFileSync(file, Buffer.concat([body, createHash("sha256").update(body).digest()]));
    const old = new DigestCache(file);
    expect(old.loadProblem).toBeNull();
    expect(old.size).toBe(0);
    expect(await captureStaticIdentity(spec, old)).toEqual(truth);
    expect(old.save()).toBe(true);
    expect(readFileSync(file).readUInt32LE(4)).toBe(4);
    const again = new DigestCache(file);
    expect(again.loadProblem).toBeNull();
    expect(again.size).toBeGreaterThan(0);
    expect(await captureStaticIdentity(spec, again)).toEqual(truth);
  });

  it("leaves tool caches at the top of node_modules (.vite, .cache) out of the tree", async () => {
    const dir = makeProject(join(root, "toolcache"));
    const spec = specFor(dir, "node", ["dist/server.js"]);
    const a = await captureStaticIdentity(spec, new DigestCache(null));
    put(dir, "node_modules/.vite/vitest/results.json", '{"run": 1}');
    put(dir, "node_modules/.cache/babel/x.json", "{}");
    const b = await captureStaticIdentity(spec, new DigestCache(null));
    expect(b.dependencyTree).toEqual(a.dependencyTree);
    put(dir, "node_modules/pkg/.vite/not-top-level.js", "1");
    const c = await captureStaticIdentity(spec, new DigestCache(null));
    expect(c.dependencyTree?.files).toBe((a.dependencyTree?.files ?? 0) + 1);
  });
});

describe("wrappers and entry resolution", () => {
  let root: string;
  beforeAll(() => {
    root = tempDir("wrap");
  });
  afterAll(() => removeDir(root));

  it("digests a wrapper shell script and finds the server it execs", async () => {
    const dir = makeProject(join(root, "shell"));
    const script = put(
      dir,
      "scripts/start.sh",
      '#!/bin/sh\n# start the server\nset -e\ncd "$(dirname "$0")/.."\nexport LOG_LEVEL=debug\nexec node dist/server.js "$@"\n',
      0o755,
    );
    const viaShebang = await captureStaticIdentity(
      specFor(dir, "./scripts/start.sh", []),
      new DigestCache(null),
    );
    expect(viaShebang.wrappers).toEqual([{ path: "scripts/start.sh", sha256: sha256File(script) }]);
    expect(viaShebang.entry).toEqual({
      path: "dist/server.js",
      sha256: sha256File(join(dir, "dist/server.js")),
    });
    expect(viaShebang.executable?.path).toBe(script);
    expect(viaShebang.runtime).toBe(`node ${process.versions.node}`);

    const viaSh = await captureStaticIdentity(
      specFor(dir, "sh", ["scripts/start.sh"]),
      new DigestCache(null),
    );
    expect(viaSh.wrappers).toEqual(viaShebang.wrappers);
    expect(viaSh.entry).toEqual(viaShebang.entry);

    // Editing the wrapper (it now starts something else) changes the identity.
    put(dir, "dist/other.js", "process.stdin.resume(); // other\n");
    writeFileSync(
      script,
      '#!/bin/sh\nDIR="$(cd "$(dirname "$0")" && pwd)"\nexec node "$DIR/../dist/other.js"\n',
    );
    const edited = await captureStaticIdentity(
      specFor(dir, "sh", ["scripts/start.sh"]),
      new DigestCache(null),
    );
    expect(edited.entry?.path).toBe("dist/other.js");
    expect(changedParts(viaSh, edited)).toEqual(["entry dist/other.js", "wrapper scripts/start.sh"]);
  });

  it("a symlinked entry loads from where it really is: that project's dependency tree and lockfile", async () => {
    const project = makeProject(join(root, "linked-target"));
    const launcher = join(root, "launcher");
    mkdirSync(launcher, { recursive: true });
    symlinkSync(join(project, "dist/server.js"), join(launcher, "server.js"));
    const s = await captureStaticIdentity(specFor(launcher, "node", ["server.js"]), new DigestCache(null));
    expect(s.entry).toEqual({ path: "server.js", sha256: sha256File(join(project, "dist/server.js")) });
    // node resolves the main script's symlinks and its imports from there
    expect(s.dependencyTree?.root).toBe(join(project, "node_modules"));
    expect(s.lockfile?.path).toBe(join(project, "package-lock.json"));
    expect(watchedPaths(s).dirs).toEqual([
      { path: join(project, "node_modules"), depth: 2, kind: "modules" },
    ]);
  });

  it("resolves node flags that take values, preloads as wrappers, and sh -c", async () => {
    const dir = makeProject(join(root, "flags"));
    const preload = put(dir, "preload.mjs", "globalThis.x = 1;\n");
    const s = await captureStaticIdentity(
      specFor(dir, "node", [
        "--watch",
        "--import",
        "./preload.mjs",
        "-r",
        "pkg",
        "--max-old-space-size",
        "64",
        "dist/server.js",
      ]),
      new DigestCache(null),
    );
    expect(s.entry?.path).toBe("dist/server.js");
    expect(s.wrappers).toEqual([{ path: "preload.mjs", sha256: sha256File(preload) }]);

    const c = await captureStaticIdentity(
      specFor(dir, "sh", ["-c", "LOG=1 exec node ./dist/server.js --port 3"]),
      new DigestCache(null),
    );
    expect(c.entry?.path).toBe("dist/server.js");
    expect(c.wrappers).toEqual([]);
  });

  it("resolves npx PKG to the package's bin in node_modules, and npm start to its script", async () => {
    const dir = makeProject(join(root, "npx"));
    put(
      dir,
      "node_modules/fake-mcp/package.json",
      JSON.stringify({ name: "fake-mcp", bin: { "fake-mcp": "bin/cli.js" } }),
    );
    const cli = put(
      dir,
      "node_modules/fake-mcp/bin/cli.js",
      "#!/usr/bin/env node\nprocess.stdin.resume();\n",
      0o755,
    );
    symlinkSync("../fake-mcp/bin/cli.js", join(dir, "node_modules/.bin/fake-mcp"));
    const n = await captureStaticIdentity(
      specFor(dir, "npx", ["-y", "fake-mcp@1.2.3", "--flag"]),
      new DigestCache(null),
    );
    expect(n.entry).toEqual({ path: "node_modules/fake-mcp/bin/cli.js", sha256: sha256File(cli) });
    expect(n.executable?.path).toMatch(/npx/);
    expect(n.runtime).toMatch(/^node \d+\.\d+\.\d+$/);

    const s = await captureStaticIdentity(specFor(dir, "npm", ["start"]), new DigestCache(null));
    expect(s.entry?.path).toBe("dist/server.js");
    expect(s.wrappers.map((w) => w.path)).toEqual(["package.json"]);
  });

  it("refuses an unreadable entry with one sentence naming the path", async () => {
    const dir = makeProject(join(root, "missing"));
    const attempt = captureStaticIdentity(specFor(dir, "node", ["dist/missing.js"]), new DigestCache(null));
    await expect(attempt).rejects.toBeInstanceOf(IdentityError);
    await expect(attempt).rejects.toThrow(
      /^cannot read the entry file dist\/missing\.js \(it does not exist\)\.$/,
    );
    await expect(
      captureStaticIdentity(specFor(dir, "no-such-command-xyz", []), new DigestCache(null)),
    ).rejects.toThrow(/^cannot find the command "no-such-command-xyz" on PATH/);
  });

  it("digests identity.include globs as identity inputs", async () => {
    const dir = makeProject(join(root, "include"));
    put(dir, "config/tools.json", '{"a":1}');
    put(dir, "config/nested/more.json", '{"b":2}');
    put(dir, "config/readme.md", "not matched");
    const spec = specFor(dir, "node", ["dist/server.js"], { include: ["config/**/*.json"] });
    const a = await captureStaticIdentity(spec, new DigestCache(null));
    expect(a.identityInputs).toMatchObject({ patterns: ["config/**/*.json"], files: 2 });
    put(dir, "config/readme.md", "still not matched, changed");
    const b = await captureStaticIdentity(spec, new DigestCache(null));
    expect(b.identityInputs).toEqual(a.identityInputs);
    put(dir, "config/nested/more.json", '{"b":3}');
    const c = await captureStaticIdentity(spec, new DigestCache(null));
    expect(c.identityInputs?.sha256).not.toBe(a.identityInputs?.sha256);
    expect(changedParts(a, c)).toEqual(["identity inputs"]);
  });
});

describe("records", () => {
  let root: string;
  let s: StaticIdentity;
  beforeAll(async () => {
    root = tempDir("record");
    makeProject(root);
  });
  afterAll(() => removeDir(root));

  it("never stores or prints environment values, but digests them", async () => {
    const secret = "sk-live-7f3a9c2e-DO-NOT-LEAK";
    const spec = specFor(root, "node", ["dist/server.js"], {
      env: { PATH: process.env.PATH ?? "", INVENTORY_API_KEY: secret },
    });
    s = await captureStaticIdentity(spec, new DigestCache(null));
    const rec = finishRecord(s, live());
    const json = JSON.stringify(rec);
    expect(json).not.toContain(secret);
    expect(json).not.toContain("sk-live");
    expect(rec.envDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const other = await captureStaticIdentity(
      { ...spec, env: { ...spec.env, INVENTORY_API_KEY: `${secret}!` } },
      new DigestCache(null),
    );
    expect(other.envDigest).not.toBe(s.envDigest);
    expect(changedParts(s, other)).toEqual(["environment"]);
  });

  it("identityDigest ignores epoch, pid, start times; follows exe, argv and scripts of processes", () => {
    const proc = (
      pid: number,
      ppid: number,
      startTime: string,
      argv = ["node", "dist/server.js"],
    ): ProcessFact => ({
      pid,
      ppid,
      startTime,
      exe: NODE,
      argv,
      exeSha256: "ab".repeat(32),
      scripts: [{ path: "dist/server.js", sha256: "cd".repeat(32) }],
    });
    const a = finishRecord(
      s,
      live("01A", 10, [proc(10, 1, "100"), proc(11, 10, "101", ["node", "child.js"])]),
    );
    const b = finishRecord(
      s,
      live("01B", 20, [proc(20, 1, "900"), proc(21, 20, "901", ["node", "child.js"])]),
    );
    expect(b.identityDigest).toBe(a.identityDigest);
    expect(a.identityDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const c = finishRecord(
      s,
      live("01C", 20, [proc(20, 1, "900"), proc(22, 20, "950", ["node", "child2.js"])]),
    );
    expect(c.identityDigest).not.toBe(a.identityDigest);
    expect(changedParts(a, c)).toEqual(["process dist/server.js"]);
    const d = finishRecord({ ...s, configDigest: "sha256:other" }, live("01A", 10, a.processes));
    expect(d.identityDigest).not.toBe(a.identityDigest);
    expect(changedParts(a, d)).toEqual(["configuration"]);
    expect(Object.keys(a)).toEqual([
      "serverLabel",
      "epoch",
      "launchCommand",
      "executable",
      "runtime",
      "entry",
      "wrappers",
      "lockfile",
      "dependencyTree",
      "identityInputs",
      "workingDirectory",
      "envDigest",
      "configDigest",
      "identityDigest",
      "processes",
      "processId",
      "startedAt",
    ]);
  });
});
