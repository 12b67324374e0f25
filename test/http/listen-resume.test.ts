// Resumable SSE on `run --listen`: a call waiting for a human streams the gateway's progress
// notice as an SSE event with an id; the client's connection drops; the human approves; the client
// comes back with GET + Last-Event-ID and gets what it missed, the call's answer included.
// Also: the standalone GET stream (server messages that belong to no request).
import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { RESUME_BUDGET_BYTES } from "../../src/transport/httpSession.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { fixtureCommand } from "../helpers/paths.js";
import { firstEventThenDrop, sessionAwaitingApproval } from "../helpers/resumption.js";
import { type Listener, startListener } from "./listen.js";
import { messagesOf, openSession, raw } from "./raw.js";

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The status of a GET (the stream, if one opens, is dropped at once). */
function statusOf(l: Listener, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: l.port, path: "/mcp", method: "GET", headers }, (res) => {
      resolve(res.statusCode ?? 0);
      req.destroy();
    });
    req.on("error", (e) => {
      if ((e as NodeJS.ErrnoException).code !== "ECONNRESET") reject(e);
    });
    req.end();
  });
}

describe("resumable SSE", () => {
  it("after a dropped stream, GET with Last-Event-ID delivers the rest, the answer included", async () => {
    const { l, session } = await sessionAwaitingApproval(cleanup);
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: "call-1",
      method: "tools/call",
      params: { name: "echo", arguments: { message: "resumed" }, _meta: { progressToken: "p1" } },
    });
    const first = await firstEventThenDrop(l, session, body);
    expect(first.contentType).toBe("text/event-stream");
    expect(JSON.parse(first.data)).toMatchObject({
      method: "notifications/progress",
      params: { progressToken: "p1" },
    });
    const req = await nextStoredRequest(l.stateDir);
    await decideByCli(l.stateDir, "approve", req.request, "--for", "call");
    const resumed = await raw(l, {
      method: "GET",
      headers: l.headers({ "mcp-session-id": session, "last-event-id": first.id }),
    });
    expect(resumed.status).toBe(200);
    const msgs = messagesOf(resumed.body);
    const answer = msgs.find((m) => m.id === "call-1");
    expect(JSON.stringify(answer?.result)).toContain("resumed");
    // nothing before the resumed id is sent again
    expect(
      msgs.filter((m) => m.method === "notifications/progress" && JSON.stringify(m) === first.data),
    ).toEqual([]);
    // an id of no stream of this session is refused
    const bogus = await raw(l, {
      method: "GET",
      headers: l.headers({ "mcp-session-id": session, "last-event-id": "999.1" }),
    });
    expect(bogus.status).toBe(404);
  });

  it("what is kept for resumption stays within the session's byte budget; an answer not delivered is still resumable", async () => {
    const l = await startListener(fixtureCommand("habits"), {
      args: ["--approval", "none"],
      env: { PORTCULLIS_DEBUG: "1" },
    });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    const headers = l.headers({ "mcp-session-id": session });
    await raw(l, { headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) });
    const bytes = 4 * 1024 * 1024;
    const blob = (id: string, ms = 0) =>
      JSON.stringify({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "blob", arguments: { bytes, ms }, _meta: { progressToken: id } },
      });
    // answers delivered whole on live connections, together far over the budget
    const calls = Math.ceil((2 * RESUME_BUDGET_BYTES) / bytes);
    const firstIds: string[] = [];
    for (let i = 0; i < calls; i++) {
      const r = await raw(l, { headers, body: blob(`big-${i}`) });
      expect(r.headers["content-type"]).toBe("text/event-stream"); // progress first, then the answer
      expect(JSON.stringify(messagesOf(r.body).at(-1)?.result).length).toBeGreaterThan(bytes);
      firstIds.push(/^id: (\S+)$/m.exec(r.body)![1]!);
    }
    // then one whose connection drops after the progress event, before its answer
    const dropped = await firstEventThenDrop(l, session, blob("undelivered", 300));
    expect(dropped.contentType).toBe("text/event-stream");

    // the first delivered streams are gone: nothing was owed on them
    const gone = await raw(l, {
      method: "GET",
      headers: l.headers({ "mcp-session-id": session, "last-event-id": firstIds[0]! }),
    });
    expect(gone.status).toBe(404);
    // the undelivered answer comes back whole on resumption
    const resumed = await raw(l, {
      method: "GET",
      headers: l.headers({ "mcp-session-id": session, "last-event-id": dropped.id }),
    });
    expect(resumed.status).toBe(200);
    const answer = messagesOf(resumed.body).find((m) => m.id === "undelivered");
    expect(JSON.stringify(answer?.result).length).toBeGreaterThan(bytes);

    // what the session kept after each event never went over the budget
    const kept = [...l.stderr().matchAll(/keeps (\d+) bytes of SSE events for resumption/g)].map((m) =>
      Number(m[1]),
    );
    expect(kept.length).toBeGreaterThanOrEqual(2 * calls);
    expect(Math.max(...kept)).toBeLessThanOrEqual(RESUME_BUDGET_BYTES);
    expect(Math.max(...kept)).toBeGreaterThan(bytes); // the count is real: a whole answer was kept
  });

  it("one standalone GET stream per session (409 for a second, and a made-up Last-Event-ID does not take it over); GET needs text/event-stream (406)", async () => {
    const l = await startListener(fixtureCommand("echo"), { args: ["--approval", "none"] });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    const open = await new Promise<import("node:http").ClientRequest>((resolve) => {
      const req = request(
        {
          host: "127.0.0.1",
          port: l.port,
          path: "/mcp",
          method: "GET",
          headers: l.headers({ "mcp-session-id": session }),
        },
        (res) => {
          expect(res.statusCode).toBe(200);
          expect(res.headers["content-type"]).toBe("text/event-stream");
          resolve(req);
        },
      );
      req.on("error", () => {});
      req.end();
    });
    const second = await raw(l, { method: "GET", headers: l.headers({ "mcp-session-id": session }) });
    expect(second.status).toBe(409);
    // a Last-Event-ID the stream never sent resumes nothing: it cannot take the stream over either
    for (const made of ["0.0", "0.1", "0.99"]) {
      const resumed = await statusOf(l, l.headers({ "mcp-session-id": session, "last-event-id": made }));
      expect(resumed, made).toBe(404);
    }
    expect((await raw(l, { method: "GET", headers: l.headers({ "mcp-session-id": session }) })).status).toBe(
      409,
    ); // the first connection still holds it
    open.destroy();
    const notSse = await raw(l, {
      method: "GET",
      headers: l.headers({ "mcp-session-id": session, accept: "application/json" }),
    });
    expect(notSse.status).toBe(406);
  });
});
