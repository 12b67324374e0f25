// A gateway whose capture will be cold (no listings of the server's dependency tree in the digest
// cache) starts its hashing workers before it opens its store (serve.ts, startHashingIfCold): the
// capture's pool takes them, and any capture's end stops those it did not take. What is checked
// here: the forecast (cold only without listings), that a pool takes the workers started ahead
// and they hash as the calling thread does, that a capture that needed none ends them, and that a
// capture with workers started ahead gives the same identity as one without.
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { HashPool, hashOutcome } from "../../src/identity/hash.js";
import {
  captureStaticIdentity,
  coldTreeAhead,
  DigestCache,
  startHashingIfCold,
} from "../../src/identity/index.js";
import { AGE_MS, makeProject, put, removeDir, sleep, specFor, tempDir } from "./fixtures.js";

describe("hashing workers started ahead of a cold capture", () => {
  let root: string;
  let project: string;

  beforeAll(async () => {
    root = tempDir("hash-ahead");
    project = makeProject(join(root, "project"));
    await sleep(AGE_MS);
  });
  afterEach(() => HashPool.dropAhead());
  afterAll(() => removeDir(root));

  it("are started only when the cache holds no listings of the tree the launch loads from", async () => {
    const file = join(root, "forecast-cache.bin");
    const spec = specFor(project, "node", ["dist/server.js"]);
    expect(coldTreeAhead(spec, new DigestCache(file))).toBe(true);
    expect(startHashingIfCold(spec, new DigestCache(file))).toBe(true);
    expect(HashPool.waitingAhead).toBe(HashPool.defaultSize());
    await captureStaticIdentity(spec, new DigestCache(file));
    expect(HashPool.waitingAhead).toBe(0); // taken by the capture's pool, or ended by its close
    // the listings are kept now: the next capture is warm, and nothing is started for it
    expect(coldTreeAhead(spec, new DigestCache(file))).toBe(false);
    expect(startHashingIfCold(spec, new DigestCache(file))).toBe(false);
    expect(HashPool.waitingAhead).toBe(0);
    // a launch that cannot be resolved, or loads no node_modules, walks no tree
    expect(coldTreeAhead(specFor(project, "no-such-command-here", []), new DigestCache(file))).toBe(false);
    const plain = put(root, "plain/run.sh", "#!/bin/sh\nexit 0\n", 0o755);
    expect(coldTreeAhead(specFor(join(root, "plain"), plain, []), new DigestCache(file))).toBe(false);
  });

  it("are taken by the next pool, and hash as the calling thread does", async () => {
    const paths = [
      put(root, "files/a", "a\n"),
      put(root, "files/b", "b".repeat(70_000)),
      join(root, "files/none"),
    ];
    HashPool.startAhead(1);
    expect(HashPool.waitingAhead).toBe(1);
    const pool = new HashPool();
    pool.start(1);
    expect(HashPool.waitingAhead).toBe(0);
    expect(pool.started).toBe(true);
    // workers only: the results are the worker's own
    const got = await pool.run(paths, Uint8Array.from([0, 0, 0]), true);
    await pool.close();
    expect(got).toEqual(paths.map((p) => hashOutcome(p, false)));
  });

  it("are ended by a capture that needed none (a warm one)", async () => {
    const file = join(root, "warm-cache.bin");
    const spec = specFor(project, "node", ["dist/server.js"]);
    await captureStaticIdentity(spec, new DigestCache(file));
    HashPool.startAhead(1);
    await captureStaticIdentity(spec, new DigestCache(file));
    expect(HashPool.waitingAhead).toBe(0);
  });

  it("leave the identity as a capture without them gives it", async () => {
    const spec = specFor(project, "node", ["dist/server.js"]);
    const without = await captureStaticIdentity(spec, new DigestCache(join(root, "without-cache.bin")));
    HashPool.startAhead();
    const withAhead = await captureStaticIdentity(spec, new DigestCache(join(root, "with-cache.bin")));
    expect(withAhead).toEqual(without);
    expect(withAhead.dependencyTree?.files).toBeGreaterThan(0);
  });
});
