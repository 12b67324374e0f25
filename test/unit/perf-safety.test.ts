// Correctness of the relay's and the guard's fast paths: a grant the Authorizer keeps from its
// last read never covers a call past a revoke (from another process: step 8 reads the grant
// again under the intent's lock; from this one: the read is dropped), and coalesced writes keep
// their order and reach the stream before it ends (a read's as it returns); the cached answer of
// the guarded-method variant check is the answer.
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { endGrants, revokeGrant } from "../../src/approval/grants.js";
import { isGuardedMethodVariant } from "../../src/gateway/protocol.js";
import { LineCoalescer, writesAfterRead } from "../../src/relay/coalesce.js";
import type { Store } from "../../src/store/db.js";
import {
  callOf,
  decideNext,
  pendingOf,
  publishPreview,
  requestCount,
  sessionGranted,
  throughStep8,
  twoConnectionsPerTest,
} from "../approval/helpers.js";

const A = "01JQ7R4S4S0QJ7GZP1S2AAAAAA";
const B = "01JQ7R9KQ6K2Y8W4JH0MBBBBBB";

describe("the Authorizer's grant cache", () => {
  let db: Store;
  let other: Store;
  twoConnectionsPerTest("portcullis-perf-", (s) => {
    ({ db, other } = s);
  });

  async function granted() {
    const { run, auth, call, grant } = await sessionGranted(db, other, A);
    // covered again and again from the cache
    for (let i = 0; i < 3; i++) {
      expect(auth.stale(call)).toBeNull();
      expect(await auth.obtain(call)).toEqual({ grant: grant.grant });
    }
    return { run, auth, call, grant };
  }

  it("a revoke from another connection stops the very next call (at step 8, under the intent's lock)", async () => {
    const { run, auth, grant } = await granted();
    revokeGrant(other, grant.grant, "test");
    const again = throughStep8(auth, () => callOf(publishPreview, A));
    await pendingOf(other, run);
    expect(requestCount(db, run)).toBe(2);
    await decideNext(other, run, { approve: false });
    expect("error" in (await again)).toBe(true);
  });

  it("a revoke through the same connection stops the very next call", async () => {
    const { run, auth, grant } = await granted();
    revokeGrant(db, grant.grant, "test");
    const again = throughStep8(auth, () => callOf(publishPreview, A));
    await pendingOf(other, run);
    await decideNext(other, run, { approve: false });
    expect("error" in (await again)).toBe(true);
  });

  it("grants ended through the same connection stop covering at once", async () => {
    const { run, auth, grant } = await granted();
    endGrants(db, [grant.grant], "test");
    const again = throughStep8(auth, () => callOf(publishPreview, A));
    await pendingOf(other, run);
    await decideNext(other, run, { approve: false });
    expect("error" in (await again)).toBe(true);
  });

  it("an epoch change after cached coverage is still reported stale once", async () => {
    const { auth } = await granted();
    const e = auth.stale(callOf(publishPreview, B));
    expect(e?.data).toMatchObject({ error: "authorization_stale", approvedEpoch: A, currentEpoch: B });
    // the stale grants were ended by that refusal: not reported twice
    expect(auth.stale(callOf(publishPreview, B))).toBeNull();
  });
});

describe("LineCoalescer", () => {
  it("writes the lines of one turn in one write, in order, and flushes before end", async () => {
    const stream = new PassThrough();
    const writes: string[] = [];
    const write = stream.write.bind(stream);
    stream.write = ((chunk: string) => {
      writes.push(String(chunk));
      return write(chunk);
    }) as typeof stream.write;
    const out = new LineCoalescer(stream);
    out.write('{"a":1}');
    out.write('{"b":2}');
    expect(writes).toEqual([]);
    await new Promise((r) => process.nextTick(r));
    expect(writes).toEqual(['{"a":1}\n{"b":2}\n']);
    out.write('{"c":3}');
    out.flush();
    stream.end();
    out.write('{"d":4}');
    await new Promise((r) => process.nextTick(r));
    expect(writes).toEqual(['{"a":1}\n{"b":2}\n', '{"c":3}\n']);
  });
});

describe("writesAfterRead", () => {
  /** A coalescer over a stream whose writes are listed. */
  function listed() {
    const stream = new PassThrough();
    const writes: string[] = [];
    const write = stream.write.bind(stream);
    stream.write = ((chunk: string) => {
      writes.push(String(chunk));
      return write(chunk);
    }) as typeof stream.write;
    return { out: new LineCoalescer(stream), writes };
  }

  it("writes what a read wrote as it returns, one write per coalescer, and what came after at the turn's end", async () => {
    const server = listed();
    const client = listed();
    const later: string[] = [];
    const onData = writesAfterRead((chunk) => {
      for (const line of chunk.toString().split("\n")) server.out.write(line);
      client.out.write('{"answer":1}');
      // a promise continuation of this read: not part of it
      void Promise.resolve().then(() => {
        server.out.write('{"later":1}');
        later.push("queued");
      });
      expect(server.writes).toEqual([]); // not while the read runs
    });
    onData(Buffer.from('{"a":1}\n{"b":2}'));
    expect(server.writes).toEqual(['{"a":1}\n{"b":2}\n']);
    expect(client.writes).toEqual(['{"answer":1}\n']);
    await new Promise((r) => setImmediate(r));
    expect(later).toEqual(["queued"]);
    expect(server.writes).toEqual(['{"a":1}\n{"b":2}\n', '{"later":1}\n']);
    // outside a read, a line waits for the turn's end as before
    server.out.write('{"c":3}');
    expect(server.writes).toHaveLength(2);
    await new Promise((r) => process.nextTick(r));
    expect(server.writes).toEqual(['{"a":1}\n{"b":2}\n', '{"later":1}\n', '{"c":3}\n']);
  });

  it("still writes what a read wrote when it throws, and a read inside a read writes with the outer one", () => {
    const server = listed();
    const inner = writesAfterRead(() => server.out.write('{"inner":1}'));
    const outer = writesAfterRead(() => {
      server.out.write('{"outer":1}');
      inner(Buffer.alloc(0));
      expect(server.writes).toEqual([]);
      throw new Error("a bug in a handler");
    });
    expect(() => outer(Buffer.alloc(0))).toThrow("a bug in a handler");
    expect(server.writes).toEqual(['{"outer":1}\n{"inner":1}\n']);
  });
});

describe("the guarded-method variant check's cache", () => {
  it("gives the same answer the second time, for short and long names, and after the cache is emptied", () => {
    const variants = ["Tools/Call", "tools/call/", " tools/call", `tools/call${" ".repeat(200)}`];
    const plain = ["ping", "tools/call", "resources/list"];
    for (let round = 0; round < 2; round++) {
      for (const m of variants) expect(isGuardedMethodVariant(m), m).toBe(true);
      for (const m of plain) expect(isGuardedMethodVariant(m), m).toBe(false);
    }
    // many other names empty the cache: the answers stay the same
    for (let i = 0; i < 600; i++) expect(isGuardedMethodVariant(`x/${i}`)).toBe(false);
    for (const m of variants) expect(isGuardedMethodVariant(m), m).toBe(true);
    expect(isGuardedMethodVariant("ping")).toBe(false);
  });
});
