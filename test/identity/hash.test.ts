import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DigestCache } from "../../src/identity/cache.js";
import { DigestJob } from "../../src/identity/digest.js";
import { HashPool, hashOutcome, POOL_MIN_FILES } from "../../src/identity/hash.js";
import { removeDir, tempDir } from "./fixtures.js";

describe("hashing", () => {
  let root: string;
  const paths: string[] = [];
  const follow: number[] = [];

  beforeAll(() => {
    root = tempDir("hash");
    const add = (name: string, bytes: Buffer | null, f = 0) => {
      const p = join(root, name);
      if (bytes !== null) writeFileSync(p, bytes);
      paths.push(p);
      follow.push(f);
      return p;
    };
    const big = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 0xff;
    add("empty", Buffer.alloc(0));
    add("small", Buffer.from("hello\n"));
    add("exact-1MiB", big.subarray(0, 1 << 20));
    add("1MiB-plus-1", big.subarray(0, (1 << 20) + 1));
    add("big", big);
    symlinkSync("small", join(root, "link"));
    add("link", null, 0); // not followed: ELOOP
    add("link", null, 1); // followed: the content of "small"
    add("missing", null);
    mkdirSync(join(root, "dir"));
    add("dir", null);
    execFileSync("mkfifo", [join(root, "fifo")]);
    add("fifo", null); // must not block
  });
  afterAll(() => removeDir(root));

  it("the worker pool and the calling thread give identical results", async () => {
    const direct = paths.map((p, i) => hashOutcome(p, follow[i] === 1));
    const pool = new HashPool();
    pool.start(2);
    const pooled = await pool.run(paths, Uint8Array.from(follow));
    expect(pooled).toEqual(direct);
    // Two jobs in flight on the same workers (a workers-only one first): each gets its own results.
    const reversed = [...paths].reverse();
    const [a, b] = await Promise.all([
      pool.run(paths, Uint8Array.from(follow), true),
      pool.run(reversed, Uint8Array.from([...follow].reverse())),
    ]);
    await pool.close();
    expect(a).toEqual(direct);
    expect(b).toEqual([...direct].reverse());

    const ref = (name: string) =>
      createHash("sha256")
        .update(readFileSync(join(root, name)))
        .digest("hex");
    const sha = (i: number) => (direct[i] as { sha: string }).sha;
    expect(sha(0)).toBe(ref("empty"));
    expect(sha(1)).toBe(ref("small"));
    expect(sha(2)).toBe(ref("exact-1MiB"));
    expect(sha(3)).toBe(ref("1MiB-plus-1"));
    expect(sha(4)).toBe(ref("big"));
    expect(direct[5]).toEqual({ error: "ELOOP" });
    expect(sha(6)).toBe(ref("small"));
    expect(direct[7]).toEqual({ error: "ENOENT" });
    expect(direct[8]).toEqual({ error: "ENOTREG" });
    expect(direct[9]).toEqual({ error: "ENOTREG" });
  });

  it("a tree large enough for workers digests the same as on the calling thread alone", async () => {
    const tree = join(root, "node_modules");
    for (let i = 0; i < POOL_MIN_FILES + 200; i++) {
      const d = join(tree, `p${i % 37}`, i % 3 === 0 ? "lib" : "");
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, `f${i}.js`), `module.exports = ${i};\n`.repeat(1 + (i % 50)));
    }
    const digest = async (threads: string) => {
      const prev = process.env.PORTCULLIS_HASH_THREADS;
      process.env.PORTCULLIS_HASH_THREADS = threads;
      try {
        const job = new DigestJob(new DigestCache(null));
        const done = job.tree(tree);
        await job.run();
        return done();
      } finally {
        if (prev === undefined) delete process.env.PORTCULLIS_HASH_THREADS;
        else process.env.PORTCULLIS_HASH_THREADS = prev;
      }
    };
    const alone = await digest("0");
    const pooled = await digest("2");
    expect(alone.files).toBe(POOL_MIN_FILES + 200);
    expect(pooled).toEqual(alone);

    // The definition: sha256 over sorted "relpath\0sha256\n" lines.
    const lines = execFileSync("sh", ["-c", "find . -type f | sed 's|^\\./||' | LC_ALL=C sort"], {
      cwd: tree,
    })
      .toString()
      .trim()
      .split("\n")
      .map((rel) => {
        const sha = createHash("sha256")
          .update(readFileSync(join(tree, rel)))
          .digest("hex");
        return `${rel}\0${sha}\n`;
      });
    expect(alone.sha256).toBe(createHash("sha256").update(lines.join("")).digest("hex"));
  });
});
