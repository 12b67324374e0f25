// A client that half-closes: it sends its request, then its FIN (curl does, and so does any client
// that calls `end()` once it has written), and reads on. For HTTP/1.1 that is no abort (RFC 9112
// §9.6): the proxy gives it the answer, whenever the upstream sends it, and ends the connection
// after the last answer it owes. Before, in a tunnel to a declared host, a request that had not
// asked to close left the tunnel open for ever, answered or not (and one with no request at all
// waited for a first byte that could not come), and in absolute form Node's server took the FIN
// for an abort: it ended the connection unanswered and the request was cut at the upstream. A FIN
// amid a request (its head, or a body short of its length) can never be followed by the rest: the
// request is cut at once, the upstream's connection holding part of it closed, recorded `failed`,
// and the client told why (before, a tunnel waited the whole timeout, then said 504). In a tunnel
// (plain HTTP through it) and in absolute form; in-process proxy, a real TCP upstream that answers
// when the test says, so that each answer comes after the client's FIN.
import { once } from "node:events";
import type { Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EgressRecord } from "../../src/vault/egress/proxy.js";
import { waitFor } from "../helpers/files.js";
import { type RawProxy, rawClient, rawProxy, recordsSince, within as withinBound } from "./rawProxyKit.js";

/** How long an awaited event may take before the test says which never came (no duration is asserted). */
const BOUND = 5000;

let p: RawProxy;
let host: string;
let records: EgressRecord[];

/** A request as the upstream got it (its head and the body its length announced), on its connection. */
interface Arrived {
  path: string;
  socket: Socket;
}
const arrived: Arrived[] = [];
/** the upstream's connections that the proxy closed or ended */
const upstreamEnded = new Set<Socket>();
/** the connection each request head came on, as soon as the head came (its body maybe not yet) */
const headOn = new Map<string, Socket>();

beforeAll(async () => {
  // Never answers by itself: the test writes each answer on the request's connection.
  p = await rawProxy((s) => {
    s.on("end", () => upstreamEnded.add(s));
    s.on("close", () => upstreamEnded.add(s));
    let got = "";
    s.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      for (;;) {
        const end = got.indexOf("\r\n\r\n");
        if (end < 0) return;
        const path = got.split(" ")[1] ?? "/";
        headOn.set(path, s);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(got.slice(0, end))?.[1] ?? 0);
        if (got.length < end + 4 + length) return;
        got = got.slice(end + 4 + length);
        arrived.push({ path, socket: s });
      }
    });
  }, BOUND);
  ({ host, records } = p);
});

afterAll(async () => {
  await p?.close();
});

/** `p`, or an error naming what never came. */
const within = <T>(q: Promise<T>, what: string) => withinBound(q, what, BOUND);

const requestOf = async (path: string) =>
  (await waitFor(() => arrived.find((a) => a.path === path), BOUND, `${path} at the upstream`)).socket;

/** A client of the proxy: in a tunnel (its 200 read) or speaking absolute form. */
async function client(how: "tunnel" | "absolute") {
  const { s, read, proxyEnded, target } = await rawClient(p, how, BOUND);
  return {
    /** a request that asks to keep the connection (no `Connection: close`) */
    get: (path: string) => `GET ${target(path)} HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
    post: (path: string, length: number, body: string) =>
      `POST ${target(path)} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${length}\r\n\r\n${body}`,
    write: (text: string) => s.write(text),
    /** the client's FIN, once it has gone out */
    halfClose: async () => {
      s.end();
      await once(s, "finish");
    },
    read,
    /** what was read by the time the proxy ended the connection */
    ended: async () => {
      await within(proxyEnded, "the proxy's end of the connection after the last answer");
      return read();
    },
  };
}

/** the records since `before`, as [method, outcome, status] */
const since = (before: number) => recordsSince(records, before);

describe("a client that half-closes after its request", () => {
  for (const how of ["tunnel", "absolute"] as const) {
    it(`${how}: the answer the upstream sends after the FIN reaches the client, then the connection ends; forwarded`, async () => {
      const before = records.length;
      const c = await client(how);
      c.write(c.get(`/late-${how}`));
      const up = await requestOf(`/late-${how}`);
      await c.halfClose();
      up.write("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate");
      const read = await c.ended();
      expect(read).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nlate$/);
      await waitFor(() => records.length > before || null, BOUND, "the record");
      expect(since(before)).toEqual([["GET", "forwarded", 200]]);
    });

    it(`${how}: an answer under way when the FIN comes is given on whole, then the connection ends; forwarded`, async () => {
      const before = records.length;
      const c = await client(how);
      c.write(c.get(`/held-${how}`));
      const up = await requestOf(`/held-${how}`);
      up.write("HTTP/1.1 202 Accepted\r\nContent-Length: 20\r\n\r\n0123456789");
      await waitFor(() => c.read().endsWith("0123456789"), BOUND, "the answer's first part at the client");
      // (with the connection closed in full instead, as resetAndDestroy does in
      // hostile-egress-cut-record.test.ts, the answer is forwarded as far as it went)
      await c.halfClose();
      up.write("abcdefghij");
      const read = await c.ended();
      expect(read).toMatch(/\r\n\r\n0123456789abcdefghij$/);
      await waitFor(() => records.length > before || null, BOUND, "the record");
      expect(since(before)).toEqual([["GET", "forwarded", 202]]);
    });

    it(`${how}: two requests pipelined before the FIN are both answered, in order, then the connection ends`, async () => {
      const before = records.length;
      const c = await client(how);
      c.write(c.get(`/one-${how}`) + c.get(`/two-${how}`));
      await c.halfClose();
      (await requestOf(`/one-${how}`)).write("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none");
      (await requestOf(`/two-${how}`)).write("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo");
      const read = await c.ended();
      expect(read).toMatch(
        /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\noneHTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\ntwo$/,
      );
      await waitFor(() => records.length >= before + 2 || null, BOUND, "the records");
      expect(since(before)).toEqual([
        ["GET", "forwarded", 200],
        ["GET", "forwarded", 200],
      ]);
    });

    it(`${how}: a FIN amid a request's body cuts it at once: a 400 saying so, its upstream connection closed, failed`, async () => {
      const before = records.length;
      const c = await client(how);
      c.write(c.post(`/short-${how}`, 10, "01234"));
      const up = await waitFor(
        () => headOn.get(`/short-${how}`),
        BOUND,
        "the request's head at the upstream",
      );
      await c.halfClose();
      const read = await c.ended();
      expect(read).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(read).toContain("the client closed its sending side before its request was whole");
      await waitFor(
        () => upstreamEnded.has(up),
        BOUND,
        "the upstream connection holding part of the request closed",
      );
      await waitFor(() => records.length > before || null, BOUND, "the record");
      expect(since(before)).toEqual([["POST", "failed", undefined]]);
    });

    it(`${how}: a FIN amid a request's head gets a 400 saying so, and nothing reaches the upstream`, async () => {
      const before = records.length;
      const c = await client(how);
      c.write(c.get(`/unfinished-${how}`).slice(0, -2));
      await c.halfClose();
      const read = await c.ended();
      expect(read).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(read).toContain("the client closed its sending side before its request was whole");
      expect(headOn.has(`/unfinished-${how}`)).toBe(false);
      expect(records.length).toBe(before);
    });
  }

  it("tunnel: a FIN after an answered request that kept the connection ends the tunnel", async () => {
    const c = await client("tunnel");
    c.write(c.get("/kept"));
    (await requestOf("/kept")).write("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nkept");
    await waitFor(() => c.read().endsWith("kept"), BOUND, "the answer at the client");
    await c.halfClose();
    expect(await c.ended()).toMatch(/\r\n\r\nkept$/);
  });

  it("tunnel: an empty line after a body is ignored (RFC 9112 §2.2): the next request is answered, and a FIN after it ends the tunnel", async () => {
    const before = records.length;
    const c = await client("tunnel");
    // (some clients end a body with an extra CRLF; Node's server ignores it in absolute form)
    c.write(`${c.post("/crlf-one", 3, "abc")}\r\n${c.get("/crlf-two")}\r\n`);
    await c.halfClose();
    (await requestOf("/crlf-one")).write("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none");
    (await requestOf("/crlf-two")).write("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo");
    const read = await c.ended();
    expect(read).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\noneHTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\ntwo$/);
    await waitFor(() => records.length >= before + 2 || null, BOUND, "the records");
    expect(since(before)).toEqual([
      ["POST", "forwarded", 200],
      ["GET", "forwarded", 200],
    ]);
  });

  it("tunnel: a FIN before any byte in the tunnel ends it", async () => {
    const c = await client("tunnel");
    await c.halfClose();
    expect(await c.ended()).toBe("");
  });
});
