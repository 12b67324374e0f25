// Interim answers (1xx) in absolute form: an upstream that says `102 Processing` and
// `103 Early Hints` (a `Link` built from the request's credential) before its 200. The client
// gets each interim head, then the final answer (a proxy must pass them on, RFC 9110 §15.2), with
// a released value taken out of the interim heads as of the final one; an HTTP/1.0 client gets
// none (in a tunnel neither, from an upstream that sends one anyway); a `101` the request did not ask for is never relayed, in absolute form or in a tunnel: a
// 502, recorded failed. In-process proxy and vault holder,
// a real TCP upstream; this process is the client, over real sockets.
import { once } from "node:events";
import { request } from "node:http";
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createCa } from "../../src/vault/egress/certs.js";
import {
  type CallInFlight,
  type EgressProxy,
  type EgressRecord,
  startEgressProxy,
} from "../../src/vault/egress/proxy.js";
import { holderSocketPath, runHolder } from "../../src/vault/holder.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";

const SECRET = "sk-interim-7c41e09b5a";
const PLACEHOLDER = "portcullis-placeholder:api";
const quiet = { info() {}, warn() {}, debug() {}, status() {} };
/** How long an awaited event may take before the test says which never came (no duration is asserted). */
const BOUND = 5000;

let stateDir: string;
let proxy: EgressProxy;
let holder: { stop(reason: "locked"): void };
let upstream: Server;
let host: string;
const sockets = new Set<Socket>();
/** the Authorization each request reached the upstream with */
const got: string[] = [];
/** the calls in flight: none, or one whose scope lets the proxy release the value */
const records: EgressRecord[] = [];
const window: { epoch: string; inFlight: CallInFlight[] } = { epoch: "E1", inFlight: [] };

/** What the upstream says before its 200, the request's token in it; `/switch`: a 101 instead. */
function answer(path: string, token: string): string {
  if (path === "/switch")
    return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
  return (
    "HTTP/1.1 102 Processing\r\n\r\n" +
    `HTTP/1.1 103 Early Hints\r\nLink: </style.css?k=${token}>; rel=preload; as=style\r\nX-Hint: ${token}\r\n\r\n` +
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
  );
}

beforeAll(async () => {
  stateDir = newStateDir();
  upstream = createServer((s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
    let buf = "";
    s.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      for (let end = buf.indexOf("\r\n\r\n"); end >= 0; end = buf.indexOf("\r\n\r\n")) {
        const head = buf.slice(0, end);
        buf = buf.slice(end + 4);
        const token = /\r\nauthorization: Bearer ([^\r]*)/i.exec(head)?.[1] ?? "";
        got.push(token);
        s.write(answer(/^\S+ (\S+)/.exec(head)?.[1] ?? "/", token));
      }
    });
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  host = `127.0.0.1:${(upstream.address() as { port: number }).port}`;
  holder = await runHolder({
    socketPath: holderSocketPath(stateDir),
    until: new Date(Date.now() + 3600_000),
    secrets: new Map([["api", { value: SECRET, deliver: "http", hosts: [host] }]]),
    ca: await createCa("interim local CA"),
  });
  proxy = await startEgressProxy({
    stateDir,
    credentials: [{ env: "API_KEY", secret: "api", deliver: "http", hosts: [host] }],
    mode: "record",
    calls: () => window,
    timeoutMs: BOUND,
    onRecord: (r) => records.push(r),
    log: quiet,
  });
});

afterAll(async () => {
  await proxy?.close();
  holder?.stop("locked");
  for (const s of sockets) s.destroy();
  upstream?.close();
  removeDir(stateDir);
});

interface Seen {
  /** each interim answer, then the final one, in the order Node's client reported them */
  events: { status: number; rawHeaders: string[] }[];
  body: string;
}

/** An absolute-form GET through the proxy with Node's client (which reports a 1xx as 'information'). */
function viaProxy(token: string): Promise<Seen> {
  return new Promise((resolve, reject) => {
    const events: Seen["events"] = [];
    const req = request({
      host: "127.0.0.1",
      port: proxy.port,
      path: `http://${host}/page`,
      headers: { host, authorization: `Bearer ${token}`, connection: "close" },
      timeout: BOUND,
    });
    req.on("information", (i) => events.push({ status: i.statusCode, rawHeaders: i.rawHeaders }));
    req.on("response", (res) => {
      events.push({ status: res.statusCode ?? 0, rawHeaders: res.rawHeaders });
      let body = "";
      res.setEncoding("latin1");
      res.on("data", (d: string) => {
        body += d;
      });
      res.on("end", () => resolve({ events, body }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error("no answer from the proxy")));
    req.on("error", reject);
    req.end();
  });
}

/**
 * Everything the proxy writes back to `text`, read as bytes until it closes; `then` is written
 * once the first answer's head came (a CONNECT's 200).
 */
async function raw(text: string, then?: string): Promise<string> {
  const s = connect(proxy.port, "127.0.0.1");
  s.on("error", () => {});
  let read = "";
  s.on("data", (d: Buffer) => {
    read += d.toString("latin1");
  });
  await once(s, "connect");
  s.write(text);
  if (then !== undefined) {
    await waitFor(() => read.includes("\r\n\r\n"), BOUND, "the CONNECT's answer");
    s.write(then);
  }
  try {
    await waitFor(() => s.destroyed || s.readableEnded || null, BOUND, "the proxy's close");
  } finally {
    s.destroy();
  }
  return read;
}

it("102 and 103 reach the client before the 200, the 103 with its Link and other headers", async () => {
  window.inFlight = [];
  const seen = await viaProxy("plain-token");
  expect(got.at(-1)).toBe("plain-token");
  expect(seen.events.map((e) => e.status)).toEqual([102, 103, 200]);
  expect(seen.events[1]!.rawHeaders).toEqual([
    "Link",
    "</style.css?k=plain-token>; rel=preload; as=style",
    "X-Hint",
    "plain-token",
  ]);
  expect(seen.body).toBe("ok");
});

it("a released value echoed in the 103's Link and headers reaches the client as its placeholder, never itself", async () => {
  window.inFlight = [{ callId: "1", epoch: "E1", scopes: ["api"], key: "k1" }];
  try {
    const seen = await viaProxy(PLACEHOLDER);
    // the upstream got the value: the proxy released it
    expect(got.at(-1)).toBe(SECRET);
    expect(seen.events.map((e) => e.status)).toEqual([102, 103, 200]);
    expect(seen.events[1]!.rawHeaders).toEqual([
      "Link",
      `</style.css?k=${PLACEHOLDER}>; rel=preload; as=style`,
      "X-Hint",
      PLACEHOLDER,
    ]);
    expect(JSON.stringify(seen)).not.toContain(SECRET);
    // the same, byte for byte on the wire
    const wire = await raw(
      `GET http://${host}/page HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`,
    );
    expect(got.at(-1)).toBe(SECRET);
    expect(wire).toMatch(/^HTTP\/1\.1 102 Processing\r\n\r\nHTTP\/1\.1 103 Early Hints\r\n/);
    expect(wire).toContain(`\r\nLink: </style.css?k=${PLACEHOLDER}>; rel=preload; as=style\r\n`);
    expect(wire).not.toContain(SECRET);
  } finally {
    window.inFlight = [];
  }
});

for (const how of ["absolute", "tunnel"] as const)
  it(`${how}: an HTTP/1.0 client gets no interim answer, only the final one`, async () => {
    const target = how === "absolute" ? `http://${host}/page` : "/page";
    const get = `GET ${target} HTTP/1.0\r\nHost: ${host}\r\nAuthorization: Bearer old-${how}\r\n\r\n`;
    let wire = await (how === "absolute"
      ? raw(get)
      : raw(`CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`, get));
    if (how === "tunnel") wire = wire.slice(wire.indexOf("\r\n\r\n") + 4);
    // (the upstream says 102 and 103 to any request, an HTTP/1.0 one too, as a careless one may)
    expect(got.at(-1)).toBe(`old-${how}`);
    expect(wire).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nok$/);
    expect(wire).not.toMatch(/HTTP\/1\.[01] 1\d\d/);
  });

for (const how of ["absolute", "tunnel"] as const)
  it(`${how}: a 101 the request did not ask for is not relayed: a 502, recorded failed`, async () => {
    const before = records.length;
    const target = how === "absolute" ? `http://${host}/switch` : "/switch";
    const get = `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;
    let wire = await (how === "absolute"
      ? raw(get)
      : raw(`CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`, get));
    if (how === "tunnel") wire = wire.slice(wire.indexOf("\r\n\r\n") + 4);
    expect(wire).toMatch(/^HTTP\/1\.1 502 [\s\S]*a protocol switch the request did not ask for/);
    expect(wire).not.toMatch(/HTTP\/1\.1 101/);
    await waitFor(() => records.length > before || null, BOUND, "the record");
    expect(records.slice(before).map((r) => [r.method, r.outcome, r.status])).toEqual([
      ["GET", "failed", undefined],
    ]);
  });
