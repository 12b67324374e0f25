// Bad input over HTTP never crashes `run --listen`: one real gateway (echo fixture), one session
// that behaves, and fast-check requests around it: every method, the session header right, wrong
// or absent, odd protocol versions, content types and Accept values, Last-Event-ID, and bodies
// from well-formed JSON-RPC to text that is not JSON. Each gets an HTTP answer (a stream that
// stays open is cut by the test after a moment); after each sequence the session that behaves is
// still served, and at the end the gateway's stderr holds no internal error or stack trace.
// PORTCULLIS_FUZZ_RUNS=N runs N sequences instead of 40.
import { request } from "node:http";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtureCommand } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";
import { messagesOf, openSession, raw } from "./raw.js";

const METHODS = [
  "initialize",
  "ping",
  "tools/list",
  "tools/call",
  "resources/list",
  "notifications/initialized",
];
const NOTIFY = ["notifications/cancelled", "notifications/progress", "notifications/roots/list_changed"];

const body = fc.oneof(
  fc
    .record({
      id: fc.oneof(fc.integer({ min: -5, max: 50 }), fc.string({ maxLength: 4 })),
      method: fc.constantFrom(...METHODS),
      params: fc.oneof(
        fc.constant({ name: "echo", arguments: { message: "x" } }),
        fc.record({ name: fc.constantFrom("echo", "nope"), arguments: fc.jsonValue({ maxDepth: 2 }) }),
        fc.jsonValue({ maxDepth: 2 }),
      ),
    })
    .map((m) => JSON.stringify({ jsonrpc: "2.0", ...m })),
  fc
    .record({ method: fc.constantFrom(...NOTIFY), params: fc.jsonValue({ maxDepth: 2 }) })
    .map((m) => JSON.stringify({ jsonrpc: "2.0", ...m })),
  fc
    .record({
      id: fc.oneof(fc.integer(), fc.string({ maxLength: 4 })),
      result: fc.jsonValue({ maxDepth: 2 }),
    })
    .map((m) => JSON.stringify({ jsonrpc: "2.0", ...m })),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }).map((a) => JSON.stringify(a)),
  fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 16 }),
  fc.constant(""),
);

const req = fc.record({
  method: fc.constantFrom("POST", "POST", "POST", "GET", "DELETE", "PUT", "OPTIONS", "PATCH"),
  session: fc.constantFrom("ours", "bogus", "absent", "empty"),
  version: fc.constantFrom(undefined, "2025-06-18", "2025-03-26", "2024-11-05", "1999-01-01", "garbage", ""),
  contentType: fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    undefined,
  ),
  accept: fc.constantFrom(
    "application/json, text/event-stream",
    "text/event-stream",
    "application/json",
    "*/*",
    undefined,
  ),
  lastEventId: fc.option(
    fc.string({ maxLength: 8 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
    { nil: undefined },
  ),
  body,
});

type Req = typeof req extends fc.Arbitrary<infer T> ? T : never;

let l: Listener;
let session: string;

beforeAll(async () => {
  l = await startListener(fixtureCommand("echo"), { args: ["--approval", "none"] });
  session = await openSession(l);
}, 30_000);

afterAll(async () => {
  await l?.close();
});

/** The request's answer status; a stream still open after a moment is cut (0 if none came). */
function send(r: Req): Promise<number> {
  const headers: Record<string, string> = {};
  if (l.token) headers.authorization = `Bearer ${l.token}`;
  // a DELETE of the session that behaves would end it: that one is never sent
  const sid =
    r.session === "ours" && r.method !== "DELETE"
      ? session
      : r.session === "absent"
        ? null
        : r.session === "empty"
          ? ""
          : "bogus-session";
  if (sid !== null) headers["mcp-session-id"] = sid;
  if (r.version !== undefined) headers["mcp-protocol-version"] = r.version;
  if (r.contentType !== undefined) headers["content-type"] = r.contentType;
  if (r.accept !== undefined) headers.accept = r.accept;
  if (r.lastEventId !== undefined) headers["last-event-id"] = r.lastEventId;
  // framed: node's client sends a DELETE's or OPTIONS' body with no length, which a server can
  // only read as the start of the next request
  const sent = r.method === "GET" ? undefined : r.body;
  if (sent !== undefined) headers["content-length"] = String(Buffer.byteLength(sent));
  return new Promise((resolve, reject) => {
    let status = 0;
    const out = request(
      { host: "127.0.0.1", port: l.port, path: "/mcp", method: r.method, headers },
      (res) => {
        status = res.statusCode ?? 0;
        res.resume();
        res.on("end", () => resolve(status));
        res.on("error", () => resolve(status));
      },
    );
    out.setTimeout(1_000, () => {
      out.destroy();
      resolve(status);
    });
    out.on("error", (e) => (status ? resolve(status) : reject(e)));
    out.end(sent);
  });
}

describe("hostile HTTP requests around a session that behaves", () => {
  it("each gets an answer, the session is still served after every sequence, and nothing fails inside", async () => {
    let probe = 1_000_000;
    await fc.assert(
      fc.asyncProperty(fc.array(req, { minLength: 1, maxLength: 6 }), async (requests) => {
        for (const r of requests) {
          const status = await send(r);
          expect(status === 0 || (status >= 200 && status < 600)).toBe(true);
        }
        const id = probe++;
        const call = JSON.stringify({
          jsonrpc: "2.0",
          id,
          method: "tools/call",
          params: { name: "echo", arguments: { message: "alive" } },
        });
        const answer = await raw(l, { headers: l.headers({ "mcp-session-id": session }), body: call });
        expect(answer.status, answer.body).toBe(200);
        const [m] = messagesOf(answer.body);
        expect(m?.id).toBe(id);
        expect(JSON.stringify(m?.result)).toContain("alive");
      }),
      { numRuns: Number(process.env.PORTCULLIS_FUZZ_RUNS ?? 40) },
    );
    expect(l.stderr()).not.toMatch(/internal error|\n\s+at .+:\d+:\d+\)?\n|Uncaught|FATAL/);
    expect(l.proc.exitCode).toBeNull();
  }, 240_000);
});
