// A warm capture that finds every entry of the dependency tree as listed keeps the tree's digest as
// a summary (cache.ts, TreeSummary), and the next warm capture takes the digest from it once its
// own checks (one lstat per file, the listing of each directory) find every entry unchanged again.
// These tests change the tree after a summary is kept and check that the next capture sees the
// change: its digest is the one a capture with an empty cache computes.
import { rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipKey } from "../../src/identity/cache.js";
import { NODE_MODULES_SKIP } from "../../src/identity/capture.js";
import { captureStaticIdentity, DigestCache } from "../../src/identity/index.js";
import { AGE_MS, makeProject, put, removeDir, sleep, specFor, tempDir } from "./fixtures.js";

describe("the tree summary of the digest cache", () => {
  let root: string;
  const aged: Record<string, string> = {};

  beforeAll(async () => {
    root = tempDir("tree-summary");
    for (const name of ["used", "rewrite", "twice", "added", "removed", "link", "bound"])
      aged[name] = makeProject(join(root, name));
    await sleep(AGE_MS);
  });
  afterAll(() => removeDir(root));

  /** A cache file whose tree has its summary: a cold capture, then a warm one that keeps it. */
  async function summarised(dir: string, name: string) {
    const file = join(root, `${name}-cache.bin`);
    const spec = specFor(dir, "node", ["dist/server.js"]);
    const cold = await captureStaticIdentity(spec, new DigestCache(file));
    expect(await captureStaticIdentity(spec, new DigestCache(file))).toEqual(cold);
    const cache = new DigestCache(file);
    const nm = join(dir, "node_modules");
    cache.listings(nm);
    const summary = cache.treeSummary(nm);
    expect(summary?.sha256).toBe(cold.dependencyTree?.sha256);
    expect(summary?.files).toBe(cold.dependencyTree?.files);
    return { file, spec, cold, cache, nm };
  }

  /** What a capture that reads every file computes now. */
  async function truth(spec: ReturnType<typeof specFor>) {
    return (await captureStaticIdentity(spec, new DigestCache(null))).dependencyTree;
  }

  it("is kept by a warm capture that met no change, and taken by the next one", async () => {
    const { file, spec, cold, cache, nm } = await summarised(aged.used!, "used");
    expect(await captureStaticIdentity(spec, cache)).toEqual(cold);
    // Taken, not recomputed: a summary put in its place (as any process of the user could write
    // one, like a listing's digests) is what the next capture records, while nothing changed.
    const forged = "f".repeat(64);
    const s = cache.treeSummary(nm)!;
    expect(s.skip).toBe(skipKey(NODE_MODULES_SKIP));
    cache.summarize(nm, s.checksum, s.skip, s.files, forged);
    expect((await captureStaticIdentity(spec, cache)).dependencyTree?.sha256).toBe(forged);
    // and left for the listings' own digests as soon as one entry differs
    put(aged.used!, "node_modules/pkg/new.js", "module.exports = 2;\n");
    const after = await captureStaticIdentity(spec, cache);
    expect(after.dependencyTree).toEqual(await truth(spec));
    expect(after.dependencyTree?.files).toBe(cold.dependencyTree!.files + 1);
    expect(new DigestCache(file).getMeta(`tree\0${nm}`)).toBeDefined();
  });

  it("a file rewritten in place with the same size is seen", async () => {
    const { spec, cold, cache } = await summarised(aged.rewrite!, "rewrite");
    const p = join(aged.rewrite!, "node_modules/pkg/lib/util.js");
    writeFileSync(p, "module.exports = { answer: 43 };\n");
    const b = await captureStaticIdentity(spec, cache);
    expect(b.dependencyTree?.sha256).not.toBe(cold.dependencyTree?.sha256);
    expect(b.dependencyTree).toEqual(await truth(spec));
  });

  it("every change is seen, not only the first the check meets", async () => {
    // the check stops at the first (@scope/deep/package.json); the walk that follows takes the
    // entries before it as checked, and must stat everything after it itself
    const { spec, cold, cache } = await summarised(aged.twice!, "twice");
    put(aged.twice!, "node_modules/@scope/deep/package.json", JSON.stringify({ name: "@scope/deeq" }));
    put(aged.twice!, "node_modules/pkg/lib/util.js", "module.exports = { answer: 43 };\n");
    const b = await captureStaticIdentity(spec, cache);
    expect(b.dependencyTree?.sha256).not.toBe(cold.dependencyTree?.sha256);
    expect(b.dependencyTree).toEqual(await truth(spec));
    put(aged.twice!, "node_modules/@scope/deep/package.json", JSON.stringify({ name: "@scope/deep" }));
    const c = await captureStaticIdentity(spec, cache);
    expect(c.dependencyTree?.sha256).not.toBe(cold.dependencyTree?.sha256);
    expect(c.dependencyTree).toEqual(await truth(spec));
  });

  it("a file added deep in the tree is seen", async () => {
    const { spec, cold, cache } = await summarised(aged.added!, "added");
    put(aged.added!, "node_modules/@scope/deep/dist/esm/extra.js", "export const extra = 2;\n");
    const b = await captureStaticIdentity(spec, cache);
    expect(b.dependencyTree?.files).toBe(cold.dependencyTree!.files + 1);
    expect(b.dependencyTree).toEqual(await truth(spec));
  });

  it("a file removed is seen", async () => {
    const { spec, cold, cache } = await summarised(aged.removed!, "removed");
    unlinkSync(join(aged.removed!, "node_modules/@scope/deep/dist/esm/index.js"));
    const b = await captureStaticIdentity(spec, cache);
    expect(b.dependencyTree?.files).toBe(cold.dependencyTree!.files - 1);
    expect(b.dependencyTree).toEqual(await truth(spec));
  });

  it("a link pointed elsewhere is seen", async () => {
    const { spec, cold, cache } = await summarised(aged.link!, "link");
    const link = join(aged.link!, "node_modules/.bin/pkg");
    rmSync(link);
    symlinkSync("../pkg/lib/util.js", link);
    const b = await captureStaticIdentity(spec, cache);
    expect(b.dependencyTree?.sha256).not.toBe(cold.dependencyTree?.sha256);
    expect(b.dependencyTree).toEqual(await truth(spec));
  });

  it("binds to the listings it was made from: a tree file written since has none until a warm capture keeps one", async () => {
    const { file, spec, nm } = await summarised(aged.bound!, "bound");
    put(aged.bound!, "node_modules/pkg/other.js", "module.exports = 3;\n");
    // this capture walks the changed directory again and writes the tree file: the summary kept
    // in the main file is of the listings before
    const changed = await captureStaticIdentity(spec, new DigestCache(file));
    const cache = new DigestCache(file);
    cache.listings(nm);
    expect(cache.getMeta(`tree\0${nm}`)).toBeDefined();
    expect(cache.treeSummary(nm)).toBeNull();
    await sleep(AGE_MS); // out of the racy window, so that the new file's digest is kept
    await captureStaticIdentity(spec, new DigestCache(file)); // keeps the new file's digest
    expect(await captureStaticIdentity(spec, new DigestCache(file))).toEqual(changed); // keeps a summary
    const again = new DigestCache(file);
    again.listings(nm);
    expect(again.treeSummary(nm)?.sha256).toBe(changed.dependencyTree?.sha256);
  });
});
