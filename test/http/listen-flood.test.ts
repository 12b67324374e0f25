// A server behind `run --listen` that writes faster than its HTTP client reads (notifications as
// fast as its stdout takes them, on a call's SSE stream the client stopped reading): what waits
// for the client is bounded, and that session's server is made to wait instead (the gateway stops
// reading its stdout), not the gateway's memory grown without end. Nothing is lost: once the
// client reads again, every notification arrives, in order, then the call's answer. Another
// session is served meanwhile (each session has its own server, and only the backed-up one is
// left unread). Real gateway, real fixture (habits.mjs `pour`); the client is node:http, whose
// response this test stops and starts reading.
import { type IncomingMessage, request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { floodProgress, readFlood, serverHeld } from "../helpers/flood.js";
import { assertBuilt } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";
import { messagesOf, openSession, raw } from "./raw.js";
import { HOSTILE, startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const MIB = 1024 * 1024;
/**
 * What a pour asks for over stdio: far past what waits for the client before the server is made to
 * wait (the 4 MiB backlog on the response, plus the socket's and the pipe's buffers: the server
 * was held at 8.5-8.9 MiB written, measured), so "held well short of half" still tells a bounded
 * gateway from one that takes everything; each MiB less is a MiB less for the gateway and this
 * test to parse (it was 64 MiB).
 */
const POUR_BYTES = 40 * MIB;
/** Behind --url the server is held later (12-13.3 MiB written, measured: one more socket between): twice that stays. */
const URL_FLOOD_BYTES = 64 * MIB;

/**
 * POSTs `call` (a tools/call) on `session` of listener `l` and resolves with the response head:
 * the body is the caller's to read, or to leave unread as a slow client does.
 */
function postCall(
  l: Listener,
  session: string,
  id: string,
  name: string,
  args: Record<string, unknown>,
): Promise<IncomingMessage> {
  const req = request({
    host: "127.0.0.1",
    port: l.port,
    path: "/mcp",
    method: "POST",
    headers: l.headers({ "mcp-session-id": session }),
  });
  cleanup.push(() => void req.destroy());
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    req.once("response", resolve);
    req.once("error", reject);
  });
  req.end(JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }));
  return response;
}

/** A short call on `session` of `l` is answered (the session, or another, is served). */
async function expectSlowCall(l: Listener, session: string, tag: string): Promise<void> {
  const call = await raw(l, {
    headers: l.headers({ "mcp-session-id": session }),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: tag,
      method: "tools/call",
      params: { name: "slow", arguments: { ms: 1, tag } },
    }),
  });
  expect(messagesOf(call.body).at(-1)).toMatchObject({
    id: tag,
    result: { content: [{ text: `slow ${tag}` }] },
  });
}

describe("a server behind run --listen that writes faster than the HTTP client reads", () => {
  it("is made to wait once a few MiB wait for the client; nothing is lost, and other sessions are served", async () => {
    assertBuilt();
    const dir = tempDir("pc-listen-pour-");
    cleanup.push(() => removeDir(dir));
    const progress = `${dir}/pour.json`;
    const l = await startListener(fixtureCommand("habits"), {
      args: ["--approval", "none"],
      env: { FIXTURE_POUR_LOG: progress },
    });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    const list = await raw(l, {
      headers: l.headers({ "mcp-session-id": session }),
      body: JSON.stringify({ jsonrpc: "2.0", id: "list", method: "tools/list" }),
    });
    expect(messagesOf(list.body)[0]).toHaveProperty("result");

    // the client asks for 40 MiB of notifications of 16 KiB each, and does not read its stream
    const bytes = POUR_BYTES;
    const response = postCall(l, session, "pour", "pour", { bytes, size: 16 * 1024 });
    const res = await response;
    expect(res.headers["content-type"]).toBe("text/event-stream");
    res.pause();
    const seen = readFlood(res, true);

    // the server's writes stop being taken: its progress stays put for a second, well short of
    // the end (before, the gateway read all of it into its memory, queued on the response)
    const stalled = await serverHeld(floodProgress(progress));
    expect(stalled.done).toBe(false);
    expect(stalled.written).toBeLessThan(bytes / 2);

    // another session of the same front is served meanwhile
    const other = await openSession(l);
    await expectSlowCall(l, other, "other");
    expect(floodProgress(progress)()?.done).toBe(false);

    // the client reads again: every notification, in order, then the call's answer
    res.resume();
    const poured = await waitFor(() => seen.answers.get("pour"), 60_000, "the answer to pour");
    const count = seen.seqs.length;
    expect(poured.result?.content?.[0]?.text).toBe(`poured ${count}`);
    expect(count).toBeGreaterThan(bytes / (17 * 1024));
    expect(seen.seqs.every((s, i) => s === i)).toBe(true);

    // and the session serves on, under the same epoch
    await expectSlowCall(l, session, "after");
    expect(l.stderr()).not.toMatch(/new execution epoch|TypeError|Unhandled|heap out of memory/);
  }, 120_000);

  it("a resume on a new connection takes over from the one that is behind, and the server is read again", async () => {
    assertBuilt();
    const dir = tempDir("pc-listen-pour-");
    cleanup.push(() => removeDir(dir));
    const progress = `${dir}/pour.json`;
    const l = await startListener(fixtureCommand("habits"), {
      args: ["--approval", "none"],
      env: { FIXTURE_POUR_LOG: progress },
    });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    const bytes = POUR_BYTES;
    const response = postCall(l, session, "pour", "pour", { bytes, size: 16 * 1024 });
    const first = await response;
    first.pause(); // never read again, never closed by this client
    const stalled = await serverHeld(floodProgress(progress));
    expect(stalled.done).toBe(false);

    // the client resumes the call's stream (the session's first, "1") after its first event, on
    // a new connection, as one that lost the old one does: the old one is the front's to drop
    const get = request({
      host: "127.0.0.1",
      port: l.port,
      path: "/mcp",
      method: "GET",
      headers: l.headers({ "mcp-session-id": session, "last-event-id": "1.1" }),
    });
    cleanup.push(() => void get.destroy());
    const resumed = await new Promise<IncomingMessage>((resolve, reject) => {
      get.once("response", resolve);
      get.once("error", reject);
      get.end();
    });
    expect(resumed.statusCode).toBe(200);
    const seen = readFlood(resumed, true);
    // what was kept for resumption, then the rest as the server writes it, then the answer (the
    // front keeps 16 MiB of a stream's events: older ones are not resumed, so only the order is
    // checked); before, the old connection held the server unread for as long as it stayed open
    const poured = await waitFor(() => seen.answers.get("pour"), 60_000, "the answer to pour");
    expect(poured.result?.content?.[0]?.text).toMatch(/^poured \d+$/);
    expect(floodProgress(progress)()?.done).toBe(true);
    expect(seen.seqs.length).toBeGreaterThan(0);
    expect(seen.seqs.every((s, i) => i === 0 || s > seen.seqs[i - 1]!)).toBe(true);
    expect(seen.seqs.at(-1)).toBe(Number(/\d+/.exec(poured.result!.content![0]!.text!)![0]) - 1);
  }, 120_000);

  it("a server reached by --url behind the session is made to wait the same way", async () => {
    assertBuilt();
    const dir = tempDir("pc-listen-flood-");
    cleanup.push(() => removeDir(dir));
    const progress = `${dir}/flood.json`;
    const server = await startFixture({ FIXTURE_FLOOD_LOG: progress }, null, 0, HOSTILE);
    cleanup.push(() => server.kill());
    const l = await startListener([], { args: ["--url", server.url, "--approval", "none"] });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    const list = await raw(l, {
      headers: l.headers({ "mcp-session-id": session }),
      body: JSON.stringify({ jsonrpc: "2.0", id: "list", method: "tools/list" }),
    });
    expect(messagesOf(list.body)[0]).toHaveProperty("result");
    const bytes = URL_FLOOD_BYTES;
    const response = postCall(l, session, "flood", "bad", { mode: "flood", bytes, size: 16 * 1024 });
    const res = await response;
    res.pause();
    const seen = readFlood(res, true);
    const stalled = await serverHeld(floodProgress(progress));
    expect(stalled.done).toBe(false);
    expect(stalled.written).toBeLessThan(bytes / 2);
    res.resume();
    const flooded = await waitFor(() => seen.answers.get("flood"), 60_000, "the answer to flood");
    expect(flooded.result?.content?.[0]?.text).toBe(`flooded ${seen.seqs.length}`);
    expect(seen.seqs.every((s, i) => s === i)).toBe(true);
  }, 120_000);
});
