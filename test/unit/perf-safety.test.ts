// Correctness of the relay's and the guard's fast paths: a grant the Authorizer keeps from its
// last read never covers a call past a revoke (from another process: step 8 reads the grant
// again under the intent's lock; from this one: the read is dropped), and
// coalesced writes keep their order and reach the stream before it ends; the cached answer of
// the guarded-method variant check is the answer.
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { endGrants, revokeGrant } from "../../src/approval/grants.js";
import { isGuardedMethodVariant } from "../../src/gateway/protocol.js";
import { LineCoalescer } from "../../src/relay/coalesce.js";
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
