// Content hashing: one synchronous routine for the calling thread, and a small pool of worker
// threads for large batches. Both read a file through one descriptor: open, fstat (the cache key
// is taken from the descriptor before reading, so a concurrent write leaves a stale key that the
// next capture re-hashes), read, close.
import { createHash, hash as oneShotHash } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { envWholeNumber } from "../util/envMs.js";

export interface HashResult {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  sha: string;
}

export type HashOutcome = HashResult | { error: string };

const NOFOLLOW = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
const FOLLOW = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);
const BUF_SIZE = 1 << 20;
let sharedBuf: Buffer | null = null;

/** Hashes one regular file. `follow` = follow a final symlink (single files); tree files never do. */
export function hashFileSync(path: string, follow: boolean): HashResult {
  if (sharedBuf === null) sharedBuf = Buffer.allocUnsafeSlow(BUF_SIZE);
  const buf = sharedBuf;
  const fd = openSync(path, follow ? FOLLOW : NOFOLLOW);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      const e = new Error(`${path} is not a regular file`) as NodeJS.ErrnoException;
      e.code = "ENOTREG";
      throw e;
    }
    let sha: string;
    if (st.size <= BUF_SIZE) {
      let got = 0;
      while (got < st.size) {
        const n = readSync(fd, buf, got, st.size - got, got);
        if (n <= 0) break;
        got += n;
      }
      sha = oneShotHash("sha256", buf.subarray(0, got));
    } else {
      const h = createHash("sha256");
      let pos = 0;
      for (;;) {
        const n = readSync(fd, buf, 0, BUF_SIZE, pos);
        if (n <= 0) break;
        h.update(n === BUF_SIZE ? buf : buf.subarray(0, n));
        pos += n;
      }
      sha = h.digest("hex");
    }
    return { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino, sha };
  } finally {
    closeSync(fd);
  }
}

function errorCode(e: unknown): string {
  return (e as NodeJS.ErrnoException)?.code ?? "EIO";
}

// The worker runs the same routine as hashFileSync; test/identity/hash.test.ts checks that both give
// the same results. It is plain CommonJS so it runs from source (vitest) and from dist alike.
const WORKER_SOURCE = `
"use strict";
const { parentPort } = require("node:worker_threads");
const fs = require("node:fs");
const crypto = require("node:crypto");
const C = fs.constants;
const NOFOLLOW = C.O_RDONLY | (C.O_NOFOLLOW || 0) | (C.O_NONBLOCK || 0);
const FOLLOW = C.O_RDONLY | (C.O_NONBLOCK || 0);
const BUF_SIZE = ${BUF_SIZE};
const buf = Buffer.allocUnsafeSlow(BUF_SIZE);
function one(path, follow) {
  const fd = fs.openSync(path, follow ? FOLLOW : NOFOLLOW);
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) { const e = new Error("not a regular file"); e.code = "ENOTREG"; throw e; }
    let sha;
    if (st.size <= BUF_SIZE) {
      let got = 0;
      while (got < st.size) { const n = fs.readSync(fd, buf, got, st.size - got, got); if (n <= 0) break; got += n; }
      sha = crypto.hash("sha256", buf.subarray(0, got));
    } else {
      const h = crypto.createHash("sha256");
      let pos = 0;
      for (;;) { const n = fs.readSync(fd, buf, 0, BUF_SIZE, pos); if (n <= 0) break; h.update(n === BUF_SIZE ? buf : buf.subarray(0, n)); pos += n; }
      sha = h.digest("hex");
    }
    return [st.size, st.mtimeMs, st.ctimeMs, st.ino, sha];
  } finally { fs.closeSync(fd); }
}
parentPort.on("message", (job) => {
  const counter = new Int32Array(job.counter);
  const { paths, follow, chunk } = job;
  const idx = [], num = [], sha = [];
  for (;;) {
    const start = Atomics.add(counter, 0, chunk);
    if (start >= paths.length) break;
    const end = Math.min(paths.length, start + chunk);
    for (let i = start; i < end; i++) {
      idx.push(i);
      try { const r = one(paths[i], follow[i] === 1); num.push(r[0], r[1], r[2], r[3]); sha.push(r[4]); }
      catch (e) { num.push(-1, 0, 0, 0); sha.push((e && e.code) || "EIO"); }
    }
  }
  parentPort.postMessage({ id: job.id, idx, num, sha });
});
`;

interface WorkerReply {
  id: number;
  idx: number[];
  num: number[];
  sha: string[];
}

/** Below this many files, a batch is hashed on the calling thread: a worker costs ~50 ms to start. */
export const POOL_MIN_FILES = 1500;
const CHUNK = 32;

/**
 * Worker threads for one capture. Start early (while walking the tree) so they are up by the time
 * hashing begins; the calling thread hashes too, so workers that are not ready yet cost nothing.
 */
export class HashPool {
  private workers: Worker[] = [];
  private jobs = 0;

  /** Worker threads besides the calling thread: PORTCULLIS_HASH_THREADS, else cores − 1 (at most 3). */
  static defaultSize(): number {
    // read as every PORTCULLIS_* number is: `3abc`, `010` or `0x4` is ignored, not taken for 3, 10 or 0
    const env = envWholeNumber("PORTCULLIS_HASH_THREADS", 0, Number.POSITIVE_INFINITY);
    if (env !== undefined) return Math.min(env, 16);
    return Math.max(0, Math.min(3, availableParallelism() - 1));
  }

  start(size = HashPool.defaultSize()): void {
    while (this.workers.length < size) {
      try {
        const w = new Worker(WORKER_SOURCE, { eval: true });
        w.on("error", () => {});
        this.workers.push(w);
      } catch {
        return;
      }
    }
  }

  get started(): boolean {
    return this.workers.length > 0;
  }

  /**
   * Hashes every path; results in input order. Never rejects: per-file failures are error codes.
   * The calling thread takes part unless `workersOnly` (then it only fills in what a dead worker
   * left), which lets a job run while the caller does something else.
   */
  async run(paths: string[], follow: Uint8Array, workersOnly = false): Promise<HashOutcome[]> {
    const out: (HashOutcome | undefined)[] = new Array(paths.length);
    const counter = new Int32Array(new SharedArrayBuffer(4));
    const job = { id: ++this.jobs, paths, follow, chunk: CHUNK, counter: counter.buffer };
    const targets = workersOnly ? this.workers.slice(0, 1) : this.workers;
    const replies = targets.map(
      (w) =>
        new Promise<WorkerReply | null>((resolve) => {
          const onMessage = (m: WorkerReply) => {
            if (m.id !== job.id) return;
            w.off("message", onMessage);
            w.off("exit", onExit);
            resolve(m);
          };
          const onExit = () => {
            w.off("message", onMessage);
            resolve(null);
          };
          w.on("message", onMessage);
          w.once("exit", onExit);
          try {
            w.postMessage(job);
          } catch {
            resolve(null);
          }
        }),
    );
    for (;;) {
      if (workersOnly && targets.length > 0) break;
      const start = Atomics.add(counter, 0, CHUNK);
      if (start >= paths.length) break;
      const end = Math.min(paths.length, start + CHUNK);
      for (let i = start; i < end; i++) out[i] = hashOutcome(paths[i]!, follow[i] === 1);
    }
    for (const reply of await Promise.all(replies)) {
      if (reply === null) continue;
      for (let k = 0; k < reply.idx.length; k++) {
        const i = reply.idx[k]!;
        const size = reply.num[4 * k]!;
        out[i] =
          size < 0
            ? { error: reply.sha[k]! }
            : {
                size,
                mtimeMs: reply.num[4 * k + 1]!,
                ctimeMs: reply.num[4 * k + 2]!,
                ino: reply.num[4 * k + 3]!,
                sha: reply.sha[k]!,
              };
      }
    }
    // A worker that died after claiming work leaves holes: hash those here.
    for (let i = 0; i < out.length; i++)
      if (out[i] === undefined) out[i] = hashOutcome(paths[i]!, follow[i] === 1);
    return out as HashOutcome[];
  }

  async close(): Promise<void> {
    const ws = this.workers;
    this.workers = [];
    await Promise.all(ws.map((w) => w.terminate().catch(() => 0)));
  }
}

export function hashOutcome(path: string, follow: boolean): HashOutcome {
  try {
    return hashFileSync(path, follow);
  } catch (e) {
    return { error: errorCode(e) };
  }
}
