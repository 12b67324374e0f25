// Requests the client cancelled are kept (MAX_CANCELLED_KEPT, src/gateway/inFlight.ts) only so
// that a server's late answer to one is recognised and dropped, never forwarded under an id the
// client may have used again; past 4,096 the oldest is forgotten, and a late answer to it is then
// dropped as one under an unknown id (docs/security.md, "A peer wearing the gateway down"). Real
// gateway, real fixture server that ignores cancellations (exhaust.mjs: `late`, answered by
// `release`), a raw client on plain pipes.
//
// The gateway's debug lines (PORTCULLIS_DEBUG=1) say each late answer it recognised as one to a
// cancelled request: the count of those is the count it kept.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { completeLines } from "../helpers/completeLines.js";
import { startExhaustGateway } from "../helpers/exhaustGateway.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";

/** MAX_CANCELLED_KEPT (src/gateway/inFlight.ts), written out */
const MAX_CANCELLED_KEPT = 4096;
/** calls at the server at once: below MAX_AT_SERVER (cancelled ones do not count toward it) */
const BATCH = 1024;
const BATCHES = 5;
const RECOGNISED = /debug: dropped the server's answer to tools\/call "(k\d+)": the client cancelled it/g;
const UNKNOWN = /warning: dropped a response from the server with an unknown id \d+/;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("late answers to requests the client cancelled", () => {
  it(`none reaches the client; at most ${MAX_CANCELLED_KEPT} are kept, the older answered as unknown ids, and the gateway keeps serving`, async () => {
    const done = join(tempDir("portcullis-late-"), "done");
    cleanup.push(() => removeDir(dirname(done)));
    const g = startExhaustGateway(
      { label: "late", env: { FIXTURE_DONE: done, PORTCULLIS_DEBUG: "1" }, stderr: "collected" },
      (end) => cleanup.push(end),
    );
    await g.init();
    const heldAtServer = () => {
      try {
        return completeLines(readFileSync(done, "utf8")).filter((l) => l.startsWith("late ")).length;
      } catch {
        return 0;
      }
    };
    const ids: string[] = [];
    for (let b = 0; b < BATCHES; b++) {
      const batch = [...Array(BATCH).keys()].map((i) => `k${b * BATCH + i}`);
      for (const id of batch)
        g.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "late", arguments: {} } });
      // each at the server before it is cancelled (one cancelled while decided is never sent)
      const atServer = (b + 1) * BATCH;
      await waitFor(() => heldAtServer() === atServer, 60_000, `${atServer} calls at the server`);
      for (const id of batch)
        g.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id } });
      ids.push(...batch);
    }
    // The client uses two of those ids again, one forgotten by now and one still kept: the late
    // answers under their old requests must reach neither new request.
    const forgotten = ids[0] as string;
    const kept = ids.at(-1) as string;
    for (const id of [forgotten, kept])
      g.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "hang", arguments: {} } });
    // the server answers every cancelled call now, then release itself: the gateway has read
    // all of those answers by the time release's reaches the client
    const released = await g.call("release", "release");
    expect(g.text(released)).toBe(`released ${ids.length}`);
    // none of the late answers was forwarded (nor the new requests answered by them)
    expect(ids.filter((id) => g.answers.has(id))).toEqual([]);
    // and it keeps serving
    expect(g.text(await g.call("after", "echo", { tag: "still" }))).toBe("echo still");
    // the stderr lines of those answers, read apart from the answers: waited for
    const recognised = () => [...g.stderr().matchAll(RECOGNISED)].map((m) => m[1]);
    await waitFor(() => recognised().length >= MAX_CANCELLED_KEPT, 20_000, "the late answers' lines");
    await waitFor(() => UNKNOWN.test(g.stderr()) || undefined, 20_000, "the unknown-id line");
    // exactly the most recently cancelled 4,096 were kept; the older ones' late answers were
    // dropped as answers under unknown ids (wire ids are never reused: they reach no request)
    expect(recognised()).toEqual(ids.slice(-MAX_CANCELLED_KEPT));
    expect(g.stderr()).not.toMatch(/lines of the gateway's log were dropped/);
    await g.end();
  }, 180_000);
});
