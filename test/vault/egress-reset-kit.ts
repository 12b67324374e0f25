// What hostile-egress-reset-after-answer and its -loaded sibling share: upstreams that answer an
// upload's head with a 413 and close with the body unread (a reset), and the client's uploads
// through an egress proxy: in absolute form, through a CONNECT tunnel, and inside TLS spoken
// through a tunnel; the egress records of a destination.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { expect } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { httpsUpstream } from "./egress-upstreams.js";
import { within as withinBound } from "./rawProxyKit.js";

/** How long an awaited event may take before the test says which never came (no duration is asserted). */
export const BOUND = 20_000;
/** the body the client announces, far more than the upstream reads before it answers */
const BODY = 1024 * 1024;
export const ROUNDS = 3;

/** The upstream: reads the head only, answers 413, and closes with the body unread (a reset). */
function answerThenReset(req: IncomingMessage, res: ServerResponse) {
  const socket = req.socket;
  socket.pause();
  res.writeHead(413, { "content-length": 8, connection: "close" });
  // (closed with data unread in the kernel: a reset, not a FIN)
  res.end("too long", () => socket.destroy());
}

/** An http:// and an https:// upstream that answer every request as answerThenReset does. */
export async function resetUpstreams() {
  const sockets = new Set<Socket>();
  const plain = createServer(answerThenReset);
  plain.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => plain.listen(0, "127.0.0.1", r));
  const tls = await httpsUpstream(tempDir("portcullis-reset-"), answerThenReset);
  return {
    plainPort: (plain.address() as { port: number }).port,
    tls,
    async close() {
      await tls.close();
      for (const s of sockets) s.destroy();
      plain.close();
    },
  };
}

/** A POST of BODY bytes in absolute form, a quarter written with the head: what the client reads by the answer's end. */
export async function upload(url: string, proxy: number): Promise<string> {
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
export async function tunnelUpload(proxy: number, authority: string): Promise<string> {
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
export async function tlsTunnelUpload(proxy: number, authority: string, ca: string): Promise<string> {
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
export async function recordsOf(p: number, dir: string) {
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
