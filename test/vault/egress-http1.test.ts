// The egress proxy's HTTP/1.1 reading inside tunnels: request heads (what it must refuse), and
// where bodies end, whatever chunks the bytes arrive in.
import { describe, expect, it } from "vitest";
import {
  BodyMeter,
  badHeaderValue,
  closes,
  HttpError,
  headEnd,
  parseRequestHead,
  parseResponseHead,
  requestFraming,
  responseFraming,
} from "../../src/vault/egress/http1.js";

const head = (text: string) => Buffer.from(text, "latin1");

/** Feeds `bytes` to a meter in pieces cut at `cuts`; returns how many bytes it took and whether it finished. */
function meter(framing: ConstructorParameters<typeof BodyMeter>[0], bytes: Buffer, cuts: number[]) {
  const m = new BodyMeter(framing);
  let taken = 0;
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    const piece = bytes.subarray(at, cut);
    at = cut;
    if (m.done) break;
    taken += m.take(piece, 0);
  }
  return { taken, done: m.done };
}

describe("request heads", () => {
  it("parses the request line and headers in order, values trimmed", () => {
    const h = parseRequestHead(head("POST /a?b=1 HTTP/1.1\r\nHost: x\r\nAuthorization:  Bearer t \r\n\r\n"));
    expect(h).toMatchObject({ method: "POST", target: "/a?b=1", minor: 1 });
    expect(h.names).toEqual(["Host", "Authorization"]);
    expect(h.values).toEqual(["x", "Bearer t"]);
    expect(requestFraming(h)).toEqual({ kind: "length", length: 0 });
    expect(closes(h)).toBe(false);
    expect(closes(parseRequestHead(head("GET / HTTP/1.0\r\n\r\n")))).toBe(true);
  });

  it.each([
    ["a malformed request line", "GET /\r\n\r\n"],
    ["a malformed request line", "GET / HTTP/2.0\r\n\r\n"],
    ["a malformed request target", "GET /\x01 HTTP/1.1\r\n\r\n"],
    ["a malformed request target", "GET /\x7f HTTP/1.1\r\n\r\n"],
    ["a folded header line", "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n"],
    ["a malformed header name", "GET / HTTP/1.1\r\nBad Name: b\r\n\r\n"],
    ["a malformed header name", "GET / HTTP/1.1\r\nno colon\r\n\r\n"],
    ["a control character", "GET / HTTP/1.1\r\nA: b\x00c\r\n\r\n"],
  ])("refuses %s: %j", (why, text) => {
    expect(() => parseRequestHead(head(text))).toThrow(HttpError);
    expect(() => parseRequestHead(head(text))).toThrow(why);
  });

  it("refuses the framings requests are smuggled with", () => {
    const f = (text: string) => () =>
      requestFraming(parseRequestHead(head(`POST / HTTP/1.1\r\n${text}\r\n`)));
    expect(f("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n")).toThrow(
      "both Transfer-Encoding and Content-Length",
    );
    expect(f("Transfer-Encoding: gzip\r\n")).toThrow("other than chunked");
    expect(f("Content-Length: 5\r\nContent-Length: 6\r\n")).toThrow("Content-Length");
    expect(f("Content-Length: -1\r\n")).toThrow("Content-Length");
    // what one parser reads as a length and another refuses or reads otherwise: refused
    expect(f("Content-Length: 5, 5\r\n")).toThrow("a malformed Content-Length");
    expect(f("Content-Length: ,5\r\n")).toThrow("a malformed Content-Length");
    expect(f("Content-Length: \r\n")).toThrow("a malformed Content-Length");
    expect(f("Content-Length: 010\r\n")).toThrow("a malformed Content-Length");
    expect(f("Content-Length: 0\r\n")()).toEqual({ kind: "length", length: 0 });
    expect(f("Content-Length: 5\r\nContent-Length: 5\r\n")).toThrow("more than one Content-Length");
    expect(f("Transfer-Encoding: ,chunked\r\n")).toThrow("an empty element in Transfer-Encoding");
    expect(() =>
      requestFraming(parseRequestHead(head("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"))),
    ).toThrow("a Transfer-Encoding in an HTTP/1.0 request");
    expect(f("Content-Length: 5\r\n")()).toEqual({ kind: "length", length: 5 });
    expect(f("Transfer-Encoding: gzip, chunked\r\n")()).toEqual({ kind: "chunked" });
  });

  it("bytes 0x80-0xff pass in targets and values as they came; a character of more than a byte is refused", () => {
    const h = parseRequestHead(head("GET /caf\xe9 HTTP/1.1\r\nX-Name: Andr\xe9\r\n\r\n"));
    expect(Buffer.from(h.target, "latin1")).toEqual(Buffer.from([0x2f, 0x63, 0x61, 0x66, 0xe9]));
    expect(badHeaderValue(h.values[0]!)).toBe(false);
    expect(badHeaderValue("value\u20ac")).toBe(true);
    expect(badHeaderValue("a\r\nX-Injected: 1")).toBe(true);
    expect(badHeaderValue("tab\tand space ok")).toBe(false);
  });

  it("finds the end of a head only once its blank line is there", () => {
    expect(headEnd(head("GET / HTTP/1.1\r\nA: b\r\n"))).toBe(-1);
    expect(headEnd(head("GET / HTTP/1.1\r\n\r\nBODY"))).toBe(18);
  });
});

describe("response framing", () => {
  it("no body for HEAD, 1xx, 204 and 304; a length, chunked, or until the close otherwise", () => {
    const r = (text: string) => parseResponseHead(head(text));
    expect(responseFraming(r("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n"), "HEAD")).toEqual({
      kind: "length",
      length: 0,
    });
    for (const s of ["100 Continue", "204 No Content", "304 Not Modified"])
      expect(responseFraming(r(`HTTP/1.1 ${s}\r\n\r\n`), "GET")).toEqual({ kind: "length", length: 0 });
    expect(responseFraming(r("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n"), "GET")).toEqual({
      kind: "length",
      length: 9,
    });
    expect(responseFraming(r("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), "GET")).toEqual({
      kind: "chunked",
    });
    expect(responseFraming(r("HTTP/1.1 200 OK\r\n\r\n"), "GET")).toEqual({ kind: "close" });
    expect(closes(r("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"))).toBe(true);
    expect(() => r("HTTP/1.1 2000 OK\r\n\r\n")).toThrow("status line");
    // only the framing headers are read out; the others are checked for their form only
    const many = r(
      "HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 3\r\nSet-Cookie: a=b\r\nConnection: close\r\n\r\n",
    );
    expect(many.names).toEqual(["Content-Length", "Connection"]);
    expect(() => r("HTTP/1.1 200 OK\r\nX-A: 1\nContent-Length: 0\r\n\r\n")).toThrow("bare CR or LF");
    expect(() => r("HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n")).toThrow("folded");
    expect(() => r("HTTP/1.1 200 OK\r\nno colon\r\n\r\n")).toThrow("malformed header line");
  });
});

describe("where a body ends, whatever pieces it arrives in", () => {
  const chunked = Buffer.from(
    "5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nTrailer: t\r\n\r\n",
    "latin1",
  );
  const next = Buffer.from("GET /next HTTP/1.1\r\n\r\n", "latin1");

  it("chunked: every single cut and every pair of cuts, with the next request behind it", () => {
    const all = Buffer.concat([chunked, next]);
    for (let a = 0; a <= all.length; a++) {
      expect(meter({ kind: "chunked" }, all, [a]), `cut at ${a}`).toEqual({
        taken: chunked.length,
        done: true,
      });
      for (let b = a; b <= all.length; b += 7)
        expect(meter({ kind: "chunked" }, all, [a, b])).toEqual({ taken: chunked.length, done: true });
    }
  });

  it("chunked: incomplete is not done; a malformed size or data longer than its size is refused", () => {
    expect(meter({ kind: "chunked" }, chunked.subarray(0, chunked.length - 2), [])).toMatchObject({
      done: false,
    });
    expect(() => meter({ kind: "chunked" }, Buffer.from("zz\r\n"), [])).toThrow("chunk size");
    expect(() => meter({ kind: "chunked" }, Buffer.from("2\r\nabc\r\n"), [])).toThrow("longer than its size");
    expect(() => meter({ kind: "chunked" }, Buffer.from("2\nab\r\n"), [])).toThrow("CRLF");
    // a bare CR is a line's end to some parsers: refused in a size line and in a trailer
    expect(() => meter({ kind: "chunked" }, Buffer.from("2;x\r\r\nab\r\n"), [])).toThrow("control character");
    expect(() => meter({ kind: "chunked" }, Buffer.from("0\r\nA: b\rc\r\n\r\n"), [])).toThrow(
      "control character",
    );
  });

  it("a length: exactly that many bytes, at any cut; until the close: everything", () => {
    const all = Buffer.concat([Buffer.from("0123456789"), next]);
    for (let a = 0; a <= all.length; a++)
      expect(meter({ kind: "length", length: 10 }, all, [a])).toEqual({ taken: 10, done: true });
    expect(meter({ kind: "close" }, all, [3])).toEqual({ taken: all.length, done: false });
    expect(new BodyMeter({ kind: "length", length: 0 }).done).toBe(true);
  });
});
