// A launched server that reads every request but answers none (exhaust.mjs: `hang`): what the
// client's requests waiting for its answers hold in the gateway is bounded by their count
// (MAX_AT_SERVER, src/gateway/inFlight.ts), since no bytes wait in the server's stdin for the
// 4 MiB bound to see. Real gateway, real fixture server, a raw client on plain pipes.
//
// What failed before: every call was written and kept for its answer, however many: 200,000
// calls of `hang` left 58 MiB more of the gateway's live heap after a full collection (about
// 300 bytes each, their intents left open in the audit), and nothing was refused.
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { startExhaustGateway } from "../helpers/exhaustGateway.js";
import { waitFor } from "../helpers/files.js";

/** MAX_AT_SERVER (src/gateway/inFlight.ts), written out: the case is also run against a gateway without it */
const MAX_AT_SERVER = 4096;
const NOT_ANSWERING = /has not answered the requests already sent to it; this one was not sent/;
const SAID = /refused a request of the client's, not sent to the server: \d+ requests of the client's wait/g;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a server that reads the client's requests but answers none", () => {
  it("is sent at most the bound's worth at once; the rest are refused, recorded and said once, and a cancelled one frees its place", async () => {
    const g = startExhaustGateway({ label: "unanswering", stderr: "collected" }, (end) => cleanup.push(end));
    await g.init();
    const extra = 20;
    const count = MAX_AT_SERVER + extra;
    for (let i = 0; i < count; i++)
      g.send({ jsonrpc: "2.0", id: `h${i}`, method: "tools/call", params: { name: "hang" } });
    const refused = () =>
      [...Array(count).keys()].filter((i) =>
        NOT_ANSWERING.test(g.answers.get(`h${i}`)?.error?.message ?? ""),
      );
    // (decided concurrently: which ones pass is not fixed, how many is)
    await waitFor(() => refused().length === extra, 30_000, `${extra} calls refused`);
    // a request the gateway only relays is refused the same way
    g.send({ jsonrpc: "2.0", id: "ping", method: "ping" });
    const ping = await g.answer("ping");
    expect(ping.error?.message).toMatch(NOT_ANSWERING);
    expect(ping.error?.data?.error).toBe("server_unavailable");
    // a call the client cancels is no longer waited for: its place is free for the next
    const written = [...Array(count).keys()].filter((i) => !g.answers.has(`h${i}`));
    expect(written.length).toBe(MAX_AT_SERVER);
    g.send({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: `h${written[0]}` },
    });
    const echo = await g.call("echo", "echo", { tag: "freed" });
    expect(g.text(echo)).toBe("echo freed");
    // and once it is answered, its place is free again: of two more, one is written, not refused
    const two = ["more1", "more2"];
    for (const id of two) g.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "hang" } });
    const full = await waitFor(() => two.find((id) => g.answers.has(id)), 30_000, "one of two refused");
    expect(g.answers.get(full)?.error?.message).toMatch(NOT_ANSWERING);
    expect(two.filter((id) => g.answers.has(id))).toEqual([full]);
    await g.end();
    // the calls written were never answered, and get the refusal of a client that went away
    // (the cancelled one gets none)
    // the cancelled one gets no answer, not even at the end
    expect(g.answers.has(`h${written[0]}`)).toBe(false);
    // said on stderr once, not once per refusal (stderr, read apart from the answers: waited for)
    await waitFor(
      () => (g.stderr().match(SAID)?.length ?? 0) > 0,
      20_000,
      "the gateway's line on the refusals",
    );
    expect(g.stderr().match(SAID)?.length).toBe(1);
    // each refused call is in the audit as a refusal of an unavailable server: denied before its
    // decision, or its intent closed (not forwarded) after it
    const events = await auditEvents(g.stateDir);
    const refusedIds = [...refused().map((i) => `h${i}`), full];
    const denied = events.filter(
      (e) => e.type === "authorization_denied" && e.reason === "server_unavailable",
    );
    const closed = events.filter(
      (e) =>
        e.type === "call_interrupted" && e.reason === "server_unavailable" && e.outcome === "not_forwarded",
    );
    expect([...denied, ...closed].map((e) => e.requestId).sort()).toEqual(refusedIds.sort());
  }, 90_000);
});
