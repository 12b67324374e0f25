// An upstream that answers before the request's body is whole (a 413 for a body too large, a 401
// before the upload), then reads no more of it, as HTTP lets a server do. The client gets the
// answer, and what it still sends of the body is read by the proxy and dropped, never sent on:
// its writes do not block. In a tunnel the proxy ends the tunnel after the answer (its side first,
// reading on until the client's FIN, RFC 9112 §9.6); in absolute form the connection serves the
// client's next request. Before, a tunnel client paused for the upstream's full connection (gone
// once the answer was whole) stayed paused, and in absolute form the body went on being piped into
// the request that was over: either way the client's writes blocked and its connection hung. The
// body (64 MiB) is larger than every socket buffer between the client and the proxy, so a proxy
// that stops reading it blocks the client's writes. In-process proxy, a real TCP upstream.
import { once } from "node:events";
import type { Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EgressRecord } from "../../src/vault/egress/proxy.js";
import { waitFor } from "../helpers/files.js";
import { type RawProxy, rawClient, rawProxy, recordsSince, within as withinBound } from "./rawProxyKit.js";

/** How long an awaited event may take before the test says which never came (no duration is asserted). */
const BOUND = 10_000;
const BODY = 64 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x61);

let p: RawProxy;
let host: string;
let records: EgressRecord[];

beforeAll(async () => {
  // /early: the head read, the body not: a 413 at once, and the connection's end; /cut: the
  // connection dropped once the head is read, no answer; any other path: a 200 naming it
  p = await rawProxy((s) => {
    let got = "";
    const onData = (d: Buffer) => {
      got += d.toString("latin1");
      const end = got.indexOf("\r\n\r\n");
      if (end < 0) return;
      const path = got.split(" ")[1] ?? "/";
      got = got.slice(end + 4);
      if (path === "/cut") s.destroy();
      else if (path === "/early") {
        s.off("data", onData);
        s.pause();
        s.end("HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo long");
      } else s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${path.length}\r\n\r\n${path}`);
    };
    s.on("data", onData);
  }, BOUND);
  ({ host, records } = p);
});

afterAll(async () => {
  await p?.close();
});

/** `p`, or an error naming what never came. */
const within = <T>(q: Promise<T>, what: string) => withinBound(q, what, BOUND);

/** Writes BODY bytes, each write waiting for room; resolves once the last is handed to the kernel. */
async function writeBody(s: Socket): Promise<void> {
  for (let sent = 0; sent < BODY; sent += CHUNK.length) {
    if (!s.write(CHUNK)) await once(s, "drain");
  }
  await new Promise<void>((resolve, reject) => s.write("", (e) => (e ? reject(e) : resolve())));
}

async function client(how: "tunnel" | "absolute", path = "/early") {
  // (it writes on after the proxy's FIN: the body's rest, as a client that has not read the answer yet does)
  const { s, read, proxyEnded, target } = await rawClient(p, how, BOUND, true);
  s.write(`POST ${target(path)} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${BODY}\r\n\r\n`);
  return { s, read, proxyEnded, target };
}

const since = (before: number) => recordsSince(records, before);

describe("an upstream that answers before the request's body is whole", () => {
  it("tunnel: the client gets the answer, its whole body is read and dropped, and the tunnel ends; forwarded", async () => {
    const before = records.length;
    const c = await client("tunnel");
    await within(writeBody(c.s), "the body's last bytes taken by the proxy");
    await within(c.proxyEnded, "the proxy's end of the tunnel");
    c.s.end();
    await within(once(c.s, "close"), "the tunnel's close");
    expect(c.read()).toMatch(/^HTTP\/1\.1 413 Content Too Large\r\n[\s\S]*\r\n\r\ntoo long$/);
    await waitFor(() => records.length > before || null, BOUND, "the record");
    expect(since(before)).toEqual([["POST", "forwarded", 413]]);
  });

  it("absolute: the client gets the answer, its whole body is read and dropped, and the connection serves the next request", async () => {
    const before = records.length;
    const c = await client("absolute");
    await within(writeBody(c.s), "the body's last bytes taken by the proxy");
    c.s.write(`GET ${c.target("/next")} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    await within(c.proxyEnded, "the proxy's end of the connection after the next request's answer");
    expect(c.read()).toMatch(
      /^HTTP\/1\.1 413 Content Too Large\r\n[\s\S]*\r\n\r\ntoo longHTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n\/next$/,
    );
    await waitFor(() => records.length >= before + 2 || null, BOUND, "the records");
    expect(since(before)).toEqual([
      ["POST", "forwarded", 413],
      ["GET", "forwarded", 200],
    ]);
  });
});

describe("an upstream that drops its connection while the client is still sending the body", () => {
  it("tunnel: the client gets the 502, its whole body is read and dropped, and the tunnel ends; failed", async () => {
    const before = records.length;
    const c = await client("tunnel", "/cut");
    await within(writeBody(c.s), "the body's last bytes taken by the proxy");
    await within(c.proxyEnded, "the proxy's end of the tunnel");
    c.s.end();
    await within(once(c.s, "close"), "the tunnel's close");
    expect(c.read()).toMatch(/^HTTP\/1\.1 502 Bad Gateway\r\n[\s\S]*portcullis egress: /);
    await waitFor(() => records.length > before || null, BOUND, "the record");
    expect(since(before)).toEqual([["POST", "failed", undefined]]);
  });

  it("absolute: the client gets the 502, its whole body is read and dropped, and the connection serves the next request", async () => {
    const before = records.length;
    const c = await client("absolute", "/cut");
    await within(writeBody(c.s), "the body's last bytes taken by the proxy");
    c.s.write(`GET ${c.target("/after-cut")} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    await within(c.proxyEnded, "the proxy's end of the connection after the next request's answer");
    expect(c.read()).toMatch(
      /^HTTP\/1\.1 502 Bad Gateway\r\n[\s\S]*portcullis egress: [^\n]*\nHTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n\/after-cut$/,
    );
    await waitFor(() => records.length >= before + 2 || null, BOUND, "the records");
    expect(since(before)).toEqual([
      ["POST", "failed", undefined],
      ["GET", "forwarded", 200],
    ]);
  });
});
