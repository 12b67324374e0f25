// The egress proxy's data path inside a tunnel and its release window, end to end over real
// sockets: a real vault holder on its Unix socket, the proxy, an HTTPS upstream verified against
// its own CA, and clients speaking CONNECT + TLS (undici, as Node's fetch does, and raw bytes).
// The call window is set by the test, as the gateway would set it.
import "reflect-metadata";
import { once } from "node:events";
import { createServer, type Server } from "node:https";
import { connect as netConnect } from "node:net";
import { Readable } from "node:stream";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { ProxyAgent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/index.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import type { EventSink } from "../../src/gateway/events.js";
import { openStore, type Store } from "../../src/store/db.js";
import { type CaMaterial, createCa, mintLeaf } from "../../src/vault/egress/certs.js";
import {
  type CallInFlight,
  type EgressProxy,
  type EgressRecord,
  startEgressProxy,
} from "../../src/vault/egress/proxy.js";
import { EgressRecorder, listDestinations } from "../../src/vault/egress/record.js";
import { askHolder, holderSocketPath, runHolder } from "../../src/vault/holder.js";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

const SECRET = "datapath-secret-5f1c";
const PLACEHOLDER = "portcullis-placeholder:api";
/**
 * What the upstream's answers say in place of the value when it got it: an answer with the value
 * itself in it has it taken out by the proxy (hostile-egress-echo.test.ts), so the upstream says
 * it was there in words of its own
 */
const ECHOED = "<the released value>";
/** the value stored again while the gateway runs, and what the upstream says of it */
const ROTATED = "rotated-value";
const ECHOED_ROTATED = "<the value stored again>";
/** A body much larger than any socket buffer, every byte known. */
const BIG = Buffer.alloc(4 << 20, "0123456789abcdef");
const quiet = { info() {}, warn() {}, debug() {}, status() {} };

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  body: string;
  connection: number;
}

let stateDir: string;
let localCa: CaMaterial;
let upstreamCa: CaMaterial;
let upstream: Server;
let host: string;
let proxy: EgressProxy;
let holder: { stop(reason: "locked"): void };
const seen: Seen[] = [];
const releases: { scope: string; call: string }[] = [];
const records: EgressRecord[] = [];
let window: { epoch: string | null; inFlight: CallInFlight[] } = { epoch: null, inFlight: [] };
let connections = 0;
const dropped = new Set<string>();
let store: Store;
let events: EventSink;
let recorder: EgressRecorder;
const emitted: Record<string, unknown>[] = [];

const call = (key: string, epoch = "E1"): CallInFlight => ({ callId: "1", epoch, scopes: ["api"], key });

async function startHolder() {
  holder = await runHolder({
    socketPath: holderSocketPath(stateDir),
    until: new Date(Date.now() + 3600_000),
    secrets: new Map([["api", { value: SECRET, deliver: "http", hosts: [host] }]]),
    ca: localCa,
  });
}

beforeAll(async () => {
  stateDir = newStateDir();
  // the gateway's record of each request: egress audit events and the destinations index
  store = openStore(stateDir);
  const sink = auditSink(AuditLog.open(store, stateDir, { sync: "normal" }), quiet);
  // what reaches the audit log, seen on its way there (the records themselves are sealed)
  events = {
    ...sink,
    emit: (e) => {
      emitted.push(e as unknown as Record<string, unknown>);
      sink.emit(e);
    },
  };
  // written when the test says (the window of a gateway's recorder is 200 ms)
  recorder = new EgressRecorder(store, "api", events, 3600_000);
  localCa = await createCa("datapath local CA");
  upstreamCa = await createCa("datapath upstream CA");
  const leaf = await mintLeaf(upstreamCa, "127.0.0.1");
  upstream = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    const connection = (req.socket as TLSSocket & { n?: number }).n ?? 0;
    let body = "";
    req.setEncoding("latin1");
    req.on("data", (c: string) => {
      body += c;
    });
    req.on("end", () => {
      // the first time: the connection closed without an answer, as a server timing out its
      // idle connections does while a request is on its way
      if (req.url?.startsWith("/drop-once") && !dropped.has(req.url)) {
        dropped.add(req.url);
        req.socket.destroy();
        return;
      }
      seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        authorization: req.headers.authorization,
        body,
        connection,
      });
      if (req.url === "/chunked") {
        res.write("part1-");
        res.end("part2");
      } else if (req.url === "/until-close") {
        res.useChunkedEncodingByDefault = false;
        res.write("until-");
        res.end("close");
      } else if (req.url === "/length") {
        const text = `${Buffer.byteLength(body, "latin1")} ${body === BIG.toString("latin1")}`;
        res.writeHead(200, { "content-length": Buffer.byteLength(text) });
        res.end(text);
      } else if (req.url === "/big") {
        res.writeHead(200, { "content-length": BIG.length });
        res.end(BIG);
      } else if (req.url === "/none") {
        res.writeHead(204);
        res.end();
      } else {
        const auth =
          req.headers.authorization?.replaceAll(SECRET, ECHOED).replaceAll(ROTATED, ECHOED_ROTATED) ?? "-";
        const text = `${req.method} ${req.url} ${auth} ${body}`;
        res.writeHead(200, { "content-type": "text/plain", "content-length": Buffer.byteLength(text) });
        res.end(text);
      }
    });
  });
  upstream.on("secureConnection", (s: TLSSocket & { n?: number }) => {
    s.n = ++connections;
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  host = `127.0.0.1:${(upstream.address() as { port: number }).port}`;
  await startHolder();
  proxy = await startEgressProxy({
    stateDir,
    credentials: [{ env: "API_KEY", secret: "api", deliver: "http", hosts: [host] }],
    mode: "record",
    calls: () => window,
    extraCa: upstreamCa.certPem,
    timeoutMs: 5000,
    onRecord: (r) => {
      records.push(r);
      recorder.record(r);
    },
    onReleaseRecord: (r) => releases.push(r),
    log: quiet,
  });
});

afterAll(async () => {
  await proxy?.close();
  recorder?.flush();
  events?.flush();
  store?.close();
  holder?.stop("locked");
  upstream?.closeAllConnections();
  upstream?.close();
  removeDir(stateDir);
});

const agent = () => new ProxyAgent({ uri: proxy.url, requestTls: { ca: localCa.certPem }, connections: 1 });

async function get(d: ProxyAgent, path: string, init: { method?: string; body?: string | Readable } = {}) {
  const r = await request(`https://${host}${path}`, {
    dispatcher: d,
    method: (init.method ?? "GET") as "GET",
    headers: { authorization: `Bearer ${PLACEHOLDER}` },
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  return { status: r.statusCode, text: await r.body.text() };
}

/** A raw tunnel: CONNECT, then TLS with the proxy's leaf. */
async function rawTunnel(): Promise<TLSSocket> {
  const s = netConnect(proxy.port, "127.0.0.1");
  s.write(`CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
  const [first] = (await once(s, "data")) as [Buffer];
  expect(first.toString("latin1")).toMatch(/^HTTP\/1\.1 200 /);
  const t = tlsConnect({ socket: s, ca: localCa.certPem, host: "127.0.0.1" });
  await once(t, "secureConnect");
  return t;
}

/** Everything read from `t` until `enough` says so or the tunnel closes. */
function readUntil(t: TLSSocket, enough: (text: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const done = () => resolve(text);
    t.on("data", (d: Buffer) => {
      text += d.toString("latin1");
      if (enough(text)) done();
    });
    t.on("close", done);
    t.on("error", done);
  });
}

describe("the data path inside a tunnel", () => {
  it("bodies and framings pass intact over one kept upstream connection; the value released once for the call", async () => {
    window = { epoch: "E1", inFlight: [call("w1")] };
    seen.length = 0;
    const before = { releases: releases.length, connections };
    const d = agent();
    expect(await get(d, "/a")).toEqual({ status: 200, text: `GET /a Bearer ${ECHOED} ` });
    expect(await get(d, "/post", { method: "POST", body: "a body of known length" })).toEqual({
      status: 200,
      text: `POST /post Bearer ${ECHOED} a body of known length`,
    });
    // a stream body goes chunked
    const chunkedBody = await get(d, "/stream", { method: "POST", body: Readable.from(["in ", "pieces"]) });
    expect(chunkedBody.text).toBe(`POST /stream Bearer ${ECHOED} in pieces`);
    expect(await get(d, "/chunked")).toEqual({ status: 200, text: "part1-part2" });
    expect(await get(d, "/head", { method: "HEAD" })).toEqual({ status: 200, text: "" });
    expect(await get(d, "/none")).toEqual({ status: 204, text: "" });
    expect(await get(d, "/after")).toEqual({ status: 200, text: `GET /after Bearer ${ECHOED} ` });
    expect(seen.map((s) => s.authorization)).toEqual(Array(7).fill(`Bearer ${SECRET}`));
    // one upstream connection for all of them, and one question to the holder
    expect(connections - before.connections).toBe(1);
    expect(releases.length - before.releases).toBe(1);
    // every request recorded, each with its status and the scope released
    const mine = records.slice(-7);
    expect(mine.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 204, 200]);
    expect(mine.every((r) => r.released[0] === "api" && r.scheme === "https" && r.call === "1")).toBe(true);
    // a body that ends with the upstream's close: passed to its end, then the tunnel closes
    expect(await get(d, "/until-close")).toEqual({ status: 200, text: "until-close" });
    expect(await get(d, "/again")).toEqual({ status: 200, text: `GET /again Bearer ${ECHOED} ` });
    await d.close();
  });

  it("two requests in one write are answered in order; a malformed one after them gets a 400", async () => {
    window = { epoch: "E1", inFlight: [call("w1")] };
    const t = await rawTunnel();
    const h = `Host: ${host}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\n`;
    const out = readUntil(t, (x) => x.includes(" xyz"));
    t.write(`GET /first HTTP/1.1\r\n${h}\r\nPOST /second HTTP/1.1\r\n${h}Content-Length: 3\r\n\r\nxyz`);
    const text = await out;
    expect(text.indexOf(`GET /first Bearer ${ECHOED}`)).toBeGreaterThan(0);
    expect(text.indexOf(`POST /second Bearer ${ECHOED} xyz`)).toBeGreaterThan(text.indexOf("/first"));
    const refused = readUntil(t, (x) => x.includes("not a well-formed"));
    t.write(`POST /smuggle HTTP/1.1\r\n${h}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`);
    expect(await refused).toMatch(/^HTTP\/1\.1 400 [\s\S]*both Transfer-Encoding and Content-Length/);
    expect(seen.some((s) => s.url === "/smuggle")).toBe(false);
    t.destroy();
  });
});

describe("a request that names another host than its tunnel's", () => {
  // The upstream picks the site from the Host header or an absolute target, not from the
  // connection: a declared host that fronts many sites (a CDN, a PaaS router) would hand the
  // credential to whichever one the request names.
  it("a Host or an absolute target naming another host gets a 421 and the upstream gets nothing; the destination's own names get the value", async () => {
    window = { epoch: "E1", inFlight: [call("w1")] };
    const port = Number(host.split(":")[1]);
    const before = seen.length;
    const auth = `Authorization: Bearer ${PLACEHOLDER}\r\n`;
    const refused = [
      `GET /fronted HTTP/1.1\r\nHost: attacker.example\r\n${auth}\r\n`,
      `GET /fronted HTTP/1.1\r\nHost: 127.0.0.1:${port + 1}\r\n${auth}\r\n`,
      `GET /fronted HTTP/1.1\r\nHost: ${host}\r\nHost: attacker.example\r\n${auth}\r\n`,
      `GET https://attacker.example/fronted HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\n`,
      `GET https://attacker.example:${port}/fronted HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\n`,
    ];
    for (const [i, head] of refused.entries()) {
      const t = await rawTunnel();
      const out = readUntil(t, (x) => x.includes("\r\n\r\n"));
      t.write(head);
      // the status line only: a failure must not print what the upstream echoed
      expect((await out).split("\r\n")[0], `request ${i}`).toMatch(/^HTTP\/1\.1 421 /);
      t.destroy();
    }
    // through the proxy's absolute-form path (as axios sends https:// URLs) too
    for (const hostHeader of ["attacker.example", `127.0.0.1:${port + 1}`]) {
      const s = netConnect(proxy.port, "127.0.0.1");
      const chunks: Buffer[] = [];
      s.on("data", (d: Buffer) => chunks.push(d));
      s.write(
        `GET https://${host}/fronted-absolute HTTP/1.1\r\nHost: ${hostHeader}\r\n${auth}Connection: close\r\n\r\n`,
      );
      await once(s, "close");
      expect(Buffer.concat(chunks).toString("latin1").split("\r\n")[0], hostHeader).toMatch(
        /^HTTP\/1\.1 421 /,
      );
    }
    expect(seen.length).toBe(before);
    // the destination's own name, or an absolute target naming it, or no Host at all (HTTP/1.0)
    // still get the value
    const allowed = [
      `GET /own HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\n`,
      `GET https://${host}/own-absolute HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\n`,
      `GET /own-no-host HTTP/1.0\r\n${auth}\r\n`,
    ];
    for (const head of allowed) {
      const t = await rawTunnel();
      const out = readUntil(t, (x) => x.includes(ECHOED));
      t.write(head);
      expect((await out).split("\r\n")[0]).toMatch(/^HTTP\/1\.1 200 /);
      t.destroy();
    }
    expect(seen.slice(before).map((x) => x.authorization)).toEqual(Array(3).fill(`Bearer ${SECRET}`));
    // a request that carries no value is none of this check's business
    const t = await rawTunnel();
    const out = readUntil(t, (x) => x.includes("GET /no-value"));
    t.write("GET /no-value HTTP/1.1\r\nHost: elsewhere.example\r\n\r\n");
    expect((await out).split("\r\n")[0]).toMatch(/^HTTP\/1\.1 200 /);
    t.destroy();
  });
});

describe("a client slower than the upstream", () => {
  it("a large answer reaches a client that stops reading for a while intact, and the tunnel serves on", async () => {
    // a call no value was released for yet: the answer to a request without a placeholder passes
    // as it came (while a value is released to the host for a call, every answer is rewritten)
    window = { epoch: "E1", inFlight: [call("w-big")] };
    const t = await rawTunnel();
    const chunks: Buffer[] = [];
    t.on("data", (d: Buffer) => chunks.push(d));
    t.pause();
    t.write(`GET /big HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    await new Promise((r) => setTimeout(r, 200)); // the proxy meets a full client meanwhile
    t.resume();
    const head = `HTTP/1.1 200 OK\r\n`;
    await new Promise<void>((resolve) => {
      const check = () => {
        const got = Buffer.concat(chunks);
        const end = got.indexOf("\r\n\r\n");
        if (end >= 0 && got.length - end - 4 >= BIG.length) resolve();
        else t.once("data", check);
      };
      check();
    });
    const got = Buffer.concat(chunks);
    const end = got.indexOf("\r\n\r\n") + 4;
    expect(got.subarray(0, head.length).toString()).toBe(head);
    expect(got.length - end).toBe(BIG.length);
    expect(got.subarray(end).equals(BIG)).toBe(true);
    chunks.length = 0;
    const next = readUntil(t, (x) => x.includes("GET /after-big"));
    t.write(`GET /after-big HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\n\r\n`);
    expect(await next).toContain(`GET /after-big Bearer ${ECHOED}`);
    t.destroy();
  });

  it("a large request body, with a length and chunked, reaches the upstream intact", async () => {
    window = { epoch: "E1", inFlight: [call("w1")] };
    const d = agent();
    expect(await get(d, "/length", { method: "POST", body: BIG.toString("latin1") })).toEqual({
      status: 200,
      text: `${BIG.length} true`,
    });
    const pieces = Array.from({ length: 64 }, (_, i) => BIG.subarray(i << 16, (i + 1) << 16));
    expect(await get(d, "/length", { method: "POST", body: Readable.from(pieces) })).toEqual({
      status: 200,
      text: `${BIG.length} true`,
    });
    expect((await get(d, "/after-bodies")).text).toBe(`GET /after-bodies Bearer ${ECHOED} `);
    await d.close();
  });
});

describe("upstream certificates", () => {
  it("verified as Node verifies: an issuer the proxy does not trust, or a name the certificate does not hold, gets a 502", async () => {
    window = { epoch: "E1", inFlight: [call("w1")] };
    const port = Number(host.split(":")[1]);
    // the same upstream, named "localhost": its certificate holds 127.0.0.1 only
    const named = `localhost:${port}`;
    const put = { op: "put", scope: "api", deliver: "http", value: SECRET };
    expect(await askHolder(stateDir, { ...put, hosts: [host, named] })).toEqual({ ok: true });
    const strict = await startEgressProxy({
      stateDir,
      credentials: [{ env: "API_KEY", secret: "api", deliver: "http", hosts: [host, named] }],
      mode: "record",
      calls: () => window,
      timeoutMs: 5000,
      onRecord: (r) => records.push(r),
      log: quiet,
    });
    const trusting = await startEgressProxy({
      stateDir,
      credentials: [{ env: "API_KEY", secret: "api", deliver: "http", hosts: [host, named] }],
      mode: "record",
      calls: () => window,
      extraCa: upstreamCa.certPem,
      timeoutMs: 5000,
      onRecord: (r) => records.push(r),
      log: quiet,
    });
    try {
      const before = seen.length;
      // no NODE_EXTRA_CA_CERTS of the user's naming the upstream's CA: Node's roots only
      const d1 = new ProxyAgent({ uri: strict.url, requestTls: { ca: localCa.certPem }, connections: 1 });
      const untrusted = await get(d1, "/untrusted");
      expect(untrusted.status).toBe(502);
      expect(untrusted.text).toMatch(/certificate/);
      await d1.close();
      const d2 = new ProxyAgent({ uri: trusting.url, requestTls: { ca: localCa.certPem }, connections: 1 });
      const r = await request(`https://${named}/wrong-name`, {
        dispatcher: d2,
        headers: { authorization: `Bearer ${PLACEHOLDER}` },
      });
      expect(r.statusCode).toBe(502);
      expect(await r.body.text()).toMatch(/does not match certificate's altnames/);
      await d2.close();
      expect(seen.length).toBe(before);
      expect(records.at(-1)).toMatchObject({ outcome: "failed", host: "localhost" });
    } finally {
      await strict.close();
      await trusting.close();
      expect(await askHolder(stateDir, { ...put, hosts: [host] })).toEqual({ ok: true });
    }
  });
});

describe("kept upstream connections", () => {
  it("an upstream that closes its idle connections: the next request goes out on a new one", async () => {
    window = { epoch: "E1", inFlight: [call("w1")] };
    const d = agent();
    expect((await get(d, "/before-idle-close")).status).toBe(200);
    const before = connections;
    for (let i = 0; i < 3; i++) {
      upstream.closeIdleConnections();
      expect(await get(d, `/after-idle-close-${i}`)).toEqual({
        status: 200,
        text: `GET /after-idle-close-${i} Bearer ${ECHOED} `,
      });
    }
    expect(connections - before).toBe(3);
    await d.close();
  });

  it("a kept connection closed without an answer: a GET is sent again on a new one, a POST fails with a 502", async () => {
    window = { epoch: "E1", inFlight: [call("w1")] };
    const d = agent();
    expect((await get(d, "/warm")).status).toBe(200);
    expect(await get(d, "/drop-once-get")).toEqual({
      status: 200,
      text: `GET /drop-once-get Bearer ${ECHOED} `,
    });
    expect((await get(d, "/warm-again")).status).toBe(200);
    const post = await get(d, "/drop-once-post", { method: "POST" });
    expect(post.status).toBe(502);
    expect(post.text).toContain("closed the connection before its answer");
    expect(seen.filter((s) => s.url.startsWith("/drop-once")).map((s) => s.url)).toEqual(["/drop-once-get"]);
    expect(records.at(-1)).toMatchObject({ outcome: "failed", method: "POST" });
    expect((await get(d, "/after-502")).status).toBe(200);
    await d.close();
  });
});

describe("the release kept for a call", () => {
  it("asked again for another call; never used once the call ended, the epoch changed, or the secret changed", async () => {
    const d = agent();
    window = { epoch: "E1", inFlight: [call("w2")] };
    const n = releases.length;
    expect((await get(d, "/w2")).text).toBe(`GET /w2 Bearer ${ECHOED} `);
    // the same request id, but another call (a new key): asked again, and recorded for it
    window = { epoch: "E1", inFlight: [call("w3")] };
    expect((await get(d, "/w3")).text).toBe(`GET /w3 Bearer ${ECHOED} `);
    expect(releases.length - n).toBe(2);
    // no call in flight: the placeholder
    window = { epoch: "E1", inFlight: [] };
    expect((await get(d, "/ended")).text).toBe(`GET /ended Bearer ${PLACEHOLDER} `);
    // the call of an epoch that is no longer the current one: the placeholder
    window = { epoch: "E2", inFlight: [call("w3", "E1")] };
    expect((await get(d, "/old-epoch")).text).toBe(`GET /old-epoch Bearer ${PLACEHOLDER} `);
    // the secret removed while unlocked: the next request gets nothing
    window = { epoch: "E1", inFlight: [call("w4")] };
    expect((await get(d, "/w4")).text).toBe(`GET /w4 Bearer ${ECHOED} `);
    expect(await askHolder(stateDir, { op: "forget", scope: "api" })).toEqual({ ok: true });
    expect((await get(d, "/forgotten")).text).toBe(`GET /forgotten Bearer ${PLACEHOLDER} `);
    // stored again with another value: the new one
    const put = { op: "put", scope: "api", deliver: "http", hosts: [host] };
    expect(await askHolder(stateDir, { ...put, value: ROTATED })).toEqual({ ok: true });
    expect((await get(d, "/rotated")).text).toBe(`GET /rotated Bearer ${ECHOED_ROTATED} `);
    // a value that would end a header line is never written into one
    expect(await askHolder(stateDir, { ...put, value: "v\r\nX-Injected: yes" })).toEqual({ ok: true });
    const injected = await get(d, "/injected");
    expect(injected.status).toBe(400);
    expect(injected.text).toContain("cannot be written into a header");
    expect(seen.some((s) => s.url === "/injected")).toBe(false);
    expect(await askHolder(stateDir, { ...put, value: SECRET })).toEqual({ ok: true });
    await d.close();
  });

  it("lock: no request read after lock returns carries the value, though the call goes on", async () => {
    const d = agent();
    window = { epoch: "E1", inFlight: [call("w5")] };
    expect((await get(d, "/before-lock")).text).toBe(`GET /before-lock Bearer ${ECHOED} `);
    expect(await askHolder(stateDir, { op: "lock" })).toEqual({ ok: true });
    // at once, no wait for the holder's connection to close
    expect((await get(d, "/after-lock")).text).toBe(`GET /after-lock Bearer ${PLACEHOLDER} `);
    await new Promise((r) => setTimeout(r, 50));
    expect((await get(d, "/later")).text).toBe(`GET /later Bearer ${PLACEHOLDER} `);
    // unlocked again (a new holder): released again for the same call
    await startHolder();
    expect((await get(d, "/unlocked")).text).toBe(`GET /unlocked Bearer ${ECHOED} `);
    await d.close();
  });
});

describe("a record that cannot be written", () => {
  it("is logged with the host as the record would show it: never a value a host was named after", async () => {
    const warned: string[] = [];
    const failing = await startEgressProxy({
      stateDir,
      credentials: [],
      mode: "record",
      calls: () => ({ epoch: "E1", inFlight: [] }),
      timeoutMs: 5000,
      onRecord: () => {
        throw new Error("database or disk is full");
      },
      log: { ...quiet, warn: (m: string) => warned.push(m) },
      shownHost: (h) => h.replaceAll(SECRET, "[redacted:api]"),
    });
    try {
      const d = new ProxyAgent({ uri: failing.url, connections: 1 });
      // a host named after the value (lower-cased, as hosts arrive): cannot resolve, still recorded
      const r = await request(`http://${SECRET}.invalid/`, { dispatcher: d }).catch((e: Error) => e);
      if (!(r instanceof Error)) await r.body.text();
      await d.close();
    } finally {
      await failing.close();
    }
    expect(warned.some((m) => m.startsWith("egress: cannot record [redacted:api].invalid:80"))).toBe(true);
    expect(warned.join("\n")).not.toContain(SECRET);
  });
});

describe("the record of each request", () => {
  it("requests alike within a window are one egress event with their count; the index counts each", async () => {
    const d = agent();
    window = { epoch: "E9", inFlight: [call("w9", "E9")] };
    recorder.flush();
    for (let i = 0; i < 5; i++) expect((await get(d, "/same")).status).toBe(200);
    expect((await get(d, "/none")).status).toBe(204);
    const sealed = async () => {
      const r = await runCli(["audit", "export"], { stateDir });
      expect(r.code, r.stderr).toBe(0);
      return r.stdout.split("\n").filter((l) => l.includes('"type":"egress"')).length;
    };
    const before = await sealed();
    recorder.flush();
    events.flush();
    const egress = emitted.filter((e) => e.type === "egress" && e.epoch === "E9");
    expect(egress.map((e) => [e.status, e.requests, e.released, e.call])).toEqual([
      [200, 5, ["api"], "1"],
      [204, 1, ["api"], "1"],
    ]);
    // two sealed records in the audit log for the six requests
    expect((await sealed()) - before).toBe(2);
    const exported = await runCli(["audit", "export"], { stateDir });
    expect(exported.stdout).not.toContain(SECRET);
    const row = listDestinations(store, "api").find((r) => r.epoch === "E9");
    expect(row).toMatchObject({
      host: "127.0.0.1",
      scheme: "https",
      method: "GET",
      requests: 6,
      released: 6,
    });
    await d.close();
  });
});
