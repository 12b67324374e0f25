// An upstream that answers a request before it has read its body (a 413 for an upload too large)
// and then closes its connection with the rest of the body unread: its kernel resets the
// connection, and the proxy's next write of the body fails. The answer the upstream wrote before
// is still waiting to be read, and the client gets it, recorded `forwarded` with its status. In
// absolute form (`http://` and `https://` URLs sent to the proxy), through a real gateway's proxy
// and real upstreams written with node:http and node:https, this process the client. Before,
// Node's socket took the failed write for the connection's end and destroyed it unread: the
// client got a 502 ("write ECONNRESET") for a request the upstream had answered, recorded
// `failed`. Below, the same while the proxy's feature test of that way still runs, put off with
// test/fixtures/refused-writes-slow.cjs: in absolute form and in CONNECT tunnels, read by the proxy
// and passed through untouched (to an undeclared host, and to a declared one it cannot read), and
// with the test held between its steps. (Tunnels with the test ended: hostile-egress-tunnel-reset.)
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import type { Gw } from "./egress-kit.js";
import { preloadedProxy, recordingProxy } from "./egress-preloaded-proxy.js";
import { httpsUpstream } from "./egress-upstreams.js";
import { within as withinBound } from "./rawProxyKit.js";

/** How long an awaited event may take before the test says which never came (no duration is asserted). */
const BOUND = 20_000;
/** the body the client announces, far more than the upstream reads before it answers */
const BODY = 1024 * 1024;
const ROUNDS = 3;

/** The upstream: reads the head only, answers 413, and closes with the body unread (a reset). */
function answerThenReset(req: IncomingMessage, res: ServerResponse) {
  const socket = req.socket;
  socket.pause();
  res.writeHead(413, { "content-length": 8, connection: "close" });
  // (closed with data unread in the kernel: a reset, not a FIN)
  res.end("too long", () => socket.destroy());
}

const sockets = new Set<Socket>();
const plain = createServer(answerThenReset);
plain.on("connection", (s: Socket) => {
  sockets.add(s);
  s.on("close", () => sockets.delete(s));
});
let tls: Awaited<ReturnType<typeof httpsUpstream>>;
let stateDir: string;
let gw: Gw;
let port: number;

beforeAll(async () => {
  await new Promise<void>((r) => plain.listen(0, "127.0.0.1", r));
  tls = await httpsUpstream(tempDir("portcullis-reset-"), answerThenReset);
  // no credential: a proxy of its own all the same, which reads absolute-form requests
  ({ gw, port, stateDir } = await recordingProxy("portcullis-reset-", {
    env: { NODE_EXTRA_CA_CERTS: tls.caFile },
  }));
}, 30_000);

afterAll(async () => {
  await gw?.close();
  await tls?.close();
  for (const s of sockets) s.destroy();
  plain.close();
});

/** A POST of BODY bytes in absolute form, a quarter written with the head: what the client reads by the answer's end. */
async function upload(url: string, proxy = port): Promise<string> {
  const s = connect({ port: proxy, host: "127.0.0.1", allowHalfOpen: true });
  s.on("error", () => {});
  let read = "";
  s.on("data", (d: Buffer) => {
    read += d.toString("latin1");
  });
  await new Promise((r) => s.once("connect", r));
  const host = new URL(url).host;
  s.write(
    `POST ${url}/upload HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${BODY}\r\n\r\n${"a".repeat(BODY / 4)}`,
  );
  try {
    // an answer whole: a length and that many bytes after its head
    await waitFor(
      () => {
        const end = read.indexOf("\r\n\r\n");
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(read.slice(0, end))?.[1] ?? -1);
        return (end >= 0 && read.length - end - 4 >= length) || null;
      },
      BOUND,
      `the proxy's answer to ${url}`,
    );
    return read;
  } finally {
    s.destroy();
  }
}

/**
 * The same upload through a CONNECT tunnel to `authority`: the head and a quarter of the body once
 * the tunnel is open, the rest in pieces after (an upload goes on writing until it reads the
 * answer); what the client read by the proxy's end of the tunnel.
 */
async function tunnelUpload(proxy: number, authority: string): Promise<string> {
  const s = connect({ port: proxy, host: "127.0.0.1", allowHalfOpen: true });
  s.on("error", () => {});
  let read = "";
  s.on("data", (d: Buffer) => {
    read += d.toString("latin1");
  });
  await new Promise((r) => s.once("connect", r));
  s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  try {
    await waitFor(() => read.includes("\r\n\r\n") || null, BOUND, "the proxy's answer to the CONNECT");
    s.write(
      `POST /upload HTTP/1.1\r\nHost: ${authority}\r\nContent-Length: ${BODY}\r\n\r\n${"a".repeat(BODY / 4)}`,
    );
    for (let k = 0; k < 12 && !s.destroyed; k++) {
      await new Promise((r) => setTimeout(r, 2));
      if (!s.destroyed) s.write("a".repeat(BODY / 16));
    }
    await waitFor(() => s.readableEnded || s.destroyed || null, BOUND, "the proxy's end of the tunnel");
    return read;
  } finally {
    s.destroy();
  }
}

/**
 * The same upload inside TLS spoken through the tunnel to `authority` (an https:// upstream the
 * proxy passes through untouched): what the client read, decrypted, by the end of the TLS stream.
 */
async function tlsTunnelUpload(proxy: number, authority: string, ca: string): Promise<string> {
  const s = connect({ port: proxy, host: "127.0.0.1" });
  s.on("error", () => {});
  let head = "";
  const opened = new Promise<void>((resolve) => {
    const onData = (d: Buffer) => {
      head += d.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      s.off("data", onData);
      resolve();
    };
    s.on("data", onData);
  });
  await new Promise((r) => s.once("connect", r));
  s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  await withinBound(opened, "the proxy's answer to the CONNECT", BOUND);
  expect(head).toMatch(/^HTTP\/1\.1 200 /);
  // (the handshake once the tunnel is open: its first bytes are the tunnel's)
  const t = tlsConnect({ socket: s, ca, host: "127.0.0.1", rejectUnauthorized: true });
  try {
    // (the upstream's reset after its answer ends the stream with an error)
    t.on("error", () => {});
    let read = "";
    t.on("data", (d: Buffer) => {
      read += d.toString("latin1");
    });
    const ended = new Promise((r) => t.once("close", r));
    await withinBound(new Promise((r) => t.once("secureConnect", r)), "the TLS handshake", BOUND);
    t.write(
      `POST /upload HTTP/1.1\r\nHost: ${authority}\r\nContent-Length: ${BODY}\r\n\r\n${"a".repeat(BODY / 4)}`,
    );
    for (let k = 0; k < 12 && !t.destroyed; k++) {
      await new Promise((r) => setTimeout(r, 2));
      if (!t.destroyed) t.write("a".repeat(BODY / 16));
    }
    await withinBound(ended, "the end of the TLS stream", BOUND);
    return read;
  } finally {
    t.destroy();
    s.destroy();
  }
}

/** The egress records of 127.0.0.1:`p` in `dir`, as [outcome, status, requests] (requests alike summed over the recorder's windows). */
async function recordsOf(p: number, dir = stateDir) {
  const events = await waitFor(
    async () => {
      const e = (await auditEvents(dir)).filter((x) => x.type === "egress" && x.port === p);
      return e.reduce((n, x) => n + Number(x.requests), 0) >= ROUNDS ? e : null;
    },
    BOUND,
    `the egress records of 127.0.0.1:${p}`,
  );
  const counts = new Map<string, number>();
  for (const e of events) {
    const key = JSON.stringify([e.outcome, e.status]);
    counts.set(key, (counts.get(key) ?? 0) + Number(e.requests));
  }
  return [...counts].map(([key, n]) => [...(JSON.parse(key) as unknown[]), n]);
}

for (const scheme of ["http", "https"] as const) {
  it(`${scheme}://: the answer the upstream wrote before resetting reaches the client; forwarded`, async () => {
    const upstreamPort = scheme === "http" ? (plain.address() as { port: number }).port : tls.port;
    for (let round = 0; round < ROUNDS; round++) {
      const read = await upload(`${scheme}://127.0.0.1:${upstreamPort}`);
      expect(read).toMatch(/^HTTP\/1\.1 413 [^\r]*\r\n/);
      expect(read).toMatch(/\r\n\r\ntoo long$/);
    }
    expect(await recordsOf(upstreamPort)).toEqual([["forwarded", 413, ROUNDS]]);
  });
}

// The feature test runs while the server starts; every connection to an upstream that would be
// made before it ends waits for it. The first four cases below have a gateway each whose test is
// put off 6 s (refused-writes-slow.cjs): the gateway is up and its proxy listening before it ends.
// Each asserts that its first answer came after the test went on (made as Node alone makes it,
// the connection gave the 413 or not depending on the load) and that every answer reached the
// client. The last has the test held between its steps. All five run at once, to keep the file
// short.
const SLOW = "refused-writes-slow.cjs";
const testWentOn = async (gw: Gw) =>
  Number(
    /at (\d+)/.exec(
      await gw.waitForStderr(/refused-writes-slow: feature test listening at (\d+)/, BOUND),
    )![1],
  );
const tunnelled413 = /^HTTP\/1\.1 200 [^\r]*\r\n\r\nHTTP\/1\.1 413 [^\r]*\r\n(?:.*\r\n)*\r\ntoo long$/;

describe.concurrent("the feature test on a loaded machine", () => {
  // Before, the request was sent on as Node makes the connection, and its 413 came back a 502:
  // what a clean-clone CI run at load 20 saw for the first upload of the cases above.
  it("a request in absolute form waits for it: the answer reaches the client", async () => {
    const slow = await preloadedProxy(SLOW, "portcullis-reset-slow-");
    try {
      const upstreamPort = (plain.address() as { port: number }).port;
      const read = await upload(`http://127.0.0.1:${upstreamPort}`, slow.port);
      const answeredAt = Date.now();
      expect(read).toMatch(/^HTTP\/1\.1 413 [^\r]*\r\n/);
      expect(read).toMatch(/\r\n\r\ntoo long$/);
      expect(answeredAt).toBeGreaterThanOrEqual(await testWentOn(slow.gw));
    } finally {
      await slow.gw.close();
    }
  }, 60_000);

  // A tunnel passed through untouched (every tunnel here: no credential declares a host): its
  // upstream is dialled once the test ended, so that the proxy's connection reads on past the
  // refused write. Before, it was dialled at once, as Node makes it, and about one upload in two
  // had its 413 lost, the tunnel closed with nothing in it.
  it("a tunnel passed through untouched waits for it: each answer reaches the client", async () => {
    const slow = await preloadedProxy(SLOW, "portcullis-reset-slow-untouched-");
    try {
      const upstream = `127.0.0.1:${(plain.address() as { port: number }).port}`;
      const reads = [await tunnelUpload(slow.port, upstream)];
      const answeredAt = Date.now();
      while (reads.length < ROUNDS) reads.push(await tunnelUpload(slow.port, upstream));
      for (const read of reads) expect(read).toMatch(tunnelled413);
      expect(answeredAt).toBeGreaterThanOrEqual(await testWentOn(slow.gw));
    } finally {
      await slow.gw.close();
    }
  }, 60_000);

  // A tunnel the proxy reads (to a declared host; plain HTTP inside, as undici tunnels http://):
  // its request waits for the test before the proxy's own connection to the upstream is made
  // (upstreams.ts). Before, that connection was made at once, as Node makes it, and stayed so for
  // its life (kept for later requests when nothing is refused): each 413 came back a 502 "write
  // ECONNRESET", recorded `failed`.
  it("a tunnel the proxy reads waits for it: each answer reaches the client, recorded forwarded", async () => {
    const upstreamPort = (plain.address() as { port: number }).port;
    const upstream = `127.0.0.1:${upstreamPort}`;
    const slow = await recordingProxy("portcullis-reset-slow-read-", { preload: SLOW, declared: [upstream] });
    try {
      const reads = [await tunnelUpload(slow.port, upstream)];
      const answeredAt = Date.now();
      while (reads.length < ROUNDS) reads.push(await tunnelUpload(slow.port, upstream));
      for (const read of reads) expect(read).toMatch(tunnelled413);
      expect(answeredAt).toBeGreaterThanOrEqual(await testWentOn(slow.gw));
      expect(await recordsOf(upstreamPort, slow.stateDir)).toEqual([["forwarded", 413, ROUNDS]]);
    } finally {
      await slow.gw.close();
    }
  }, 60_000);

  // A tunnel to a declared host the proxy cannot read (no leaf: the vault is locked, no holder runs)
  // is passed through untouched too, its upstream dialled once the test ended. Before, at once.
  it("a tunnel to a declared host passed through untouched waits for it: each answer reaches the client", async () => {
    const upstream = `127.0.0.1:${tls.port}`;
    const slow = await recordingProxy("portcullis-reset-slow-unread-", {
      preload: SLOW,
      declared: [upstream],
    });
    try {
      const ca = readFileSync(tls.caFile, "utf8");
      const reads = [await tlsTunnelUpload(slow.port, upstream, ca)];
      const answeredAt = Date.now();
      while (reads.length < ROUNDS) reads.push(await tlsTunnelUpload(slow.port, upstream, ca));
      for (const read of reads) {
        expect(read).toMatch(/^HTTP\/1\.1 413 [^\r]*\r\n/);
        expect(read).toMatch(/\r\n\r\ntoo long$/);
      }
      expect(answeredAt).toBeGreaterThanOrEqual(await testWentOn(slow.gw));
    } finally {
      await slow.gw.close();
    }
  }, 60_000);

  // The feature test bounds each of its steps (10 s), not the whole of it: a gateway starting on a
  // loaded machine is held by other work between the steps (the fixture holds it 1.5 s twice).
  // Before, one bound of 2 s ran over the whole test, which failed on a Node where the way works:
  // the gateway said at start that such an answer reaches the client as a 502, and it did (what
  // runs of this file beside others at load 15 saw for the cases above, one run in five).
  it("a feature test held between its steps still finds the way: the answer reaches the client, nothing said", async () => {
    const held = await preloadedProxy("refused-writes-held.cjs", "portcullis-reset-held-");
    try {
      await held.gw.waitForStderr(/refused-writes-held: feature test held twice/, BOUND);
      const upstreamPort = (plain.address() as { port: number }).port;
      const read = await upload(`http://127.0.0.1:${upstreamPort}`, held.port);
      expect(read).toMatch(/^HTTP\/1\.1 413 [^\r]*\r\n/);
      expect(read).toMatch(/\r\n\r\ntoo long$/);
      expect(held.gw.stderr()).not.toMatch(/cannot read on past/);
    } finally {
      await held.gw.close();
    }
  }, 60_000);
});
