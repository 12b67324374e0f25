/**
 * Just enough HTTP/1.1 for the egress proxy's data path inside a tunnel: a request head parsed
 * (the placeholders live in the target and the header values), a response's status line and
 * framing, and where a body ends (Content-Length, chunked, or the connection's close). Bodies are
 * only measured, the bytes passing through as they came, except an answer's body that is
 * rewritten (`BodyMeter.onData`, echo.ts).
 */

/** The most a head may take (request line or status line and headers). */
export const MAX_HEAD_BYTES = 64 * 1024;

export class HttpError extends Error {}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// a header value: visible characters, spaces and tabs, and obs-text (bytes 0x80-0xff, one
// character each, as heads are read and written in latin1); nothing else
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f\u0100-\uffff]/;

/**
 * Whether a header value holds a character that may not be in one: CR and LF among them, and any
 * character that is no single byte (a released value is written as it is read, in latin1).
 */
export function badHeaderValue(v: string): boolean {
  return BAD_VALUE.test(v);
}
const TARGET = /^[\x21-\x7e\x80-\xff]+$/;

export interface Head {
  /** names and values in the order received (values trimmed of surrounding spaces) */
  names: string[];
  values: string[];
}

export interface RequestHead extends Head {
  method: string;
  target: string;
  /** 0 or 1 (HTTP/1.0, HTTP/1.1) */
  minor: number;
}

export interface ResponseHead extends Head {
  status: number;
  minor: number;
}

/** How a body is delimited. */
export type Framing = { kind: "length"; length: number } | { kind: "chunked" } | { kind: "close" };

/** The index just past the head's blank line in `buf`, or -1 while the head is incomplete. */
export function headEnd(buf: Buffer): number {
  const i = buf.indexOf("\r\n\r\n", 0, "latin1");
  return i < 0 ? -1 : i + 4;
}

function headers(lines: string[]): Head {
  const names: string[] = [];
  const values: string[] = [];
  for (const line of lines) {
    if (line === "") continue;
    if (line[0] === " " || line[0] === "\t") throw new HttpError("a folded header line");
    const colon = line.indexOf(":");
    const name = colon > 0 ? line.slice(0, colon) : "";
    if (!TOKEN.test(name)) throw new HttpError("a malformed header name");
    const value = line.slice(colon + 1).trim();
    if (BAD_VALUE.test(value)) throw new HttpError(`a control character in the ${name} header`);
    names.push(name);
    values.push(value);
  }
  return { names, values };
}

/** Parses a request head (the bytes up to and including its blank line). */
export function parseRequestHead(head: Buffer): RequestHead {
  const lines = head.toString("latin1").split("\r\n");
  const m = /^(\S+) (\S+) HTTP\/1\.([01])$/.exec(lines[0] ?? "");
  if (!m || !TOKEN.test(m[1]!)) throw new HttpError("a malformed request line");
  if (!TARGET.test(m[2]!)) throw new HttpError("a malformed request target");
  return { method: m[1]!, target: m[2]!, minor: Number(m[3]), ...headers(lines.slice(1)) };
}

// in a whole head: a control character other than tab, or a CR or LF that is not a line's end
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
const BAD_HEAD = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)|(?<!\r)\n/;
/** The response headers the proxy reads (where the body ends, whether the connection stays). */
const FRAMING = new Set(["transfer-encoding", "content-length", "connection"]);

/**
 * Parses a response head for what the proxy needs: the status and the headers that frame the
 * body (`names`/`values` hold only those). The head itself is passed on as it came, so the other
 * headers are only checked for the form of a line (a name, a colon, no folding, no stray
 * control character), not copied out.
 */
export function parseResponseHead(head: Buffer): ResponseHead {
  const text = head.toString("latin1");
  if (BAD_HEAD.test(text)) throw new HttpError("a control character or a bare CR or LF in a response head");
  let at = text.indexOf("\r\n");
  const m = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/.exec(text.slice(0, at));
  if (!m) throw new HttpError("a malformed status line");
  const names: string[] = [];
  const values: string[] = [];
  for (at += 2; at < text.length; ) {
    const end = text.indexOf("\r\n", at);
    if (end === at || end < 0) break;
    const c = text.charCodeAt(at);
    if (c === 32 || c === 9) throw new HttpError("a folded header line");
    const colon = text.indexOf(":", at);
    if (colon <= at || colon > end) throw new HttpError("a malformed header line");
    const n = colon - at;
    if (n === 17 || n === 14 || n === 10) {
      const name = text.slice(at, colon);
      if (FRAMING.has(name.toLowerCase())) {
        names.push(name);
        values.push(text.slice(colon + 1, end).trim());
      }
    }
    at = end + 2;
  }
  return { status: Number(m[2]), minor: Number(m[1]), names, values };
}

/** The values of one header (case-insensitive name), each split at commas. */
export function headerList(h: Head, name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < h.names.length; i++)
    if (h.names[i]!.toLowerCase() === name)
      for (const v of h.values[i]!.split(",")) if (v.trim()) out.push(v.trim().toLowerCase());
  return out;
}

function framingOf(h: Head, otherwise: Framing): Framing {
  const te = headerList(h, "transfer-encoding");
  const cl = headerList(h, "content-length");
  if (te.length > 0) {
    // a length beside a transfer coding is how requests are smuggled: refused (RFC 9112 §6.3)
    if (cl.length > 0) throw new HttpError("both Transfer-Encoding and Content-Length");
    if (te[te.length - 1] !== "chunked") throw new HttpError("a transfer coding other than chunked last");
    return { kind: "chunked" };
  }
  if (cl.length > 0) {
    if (cl.some((v) => v !== cl[0]) || !/^\d{1,15}$/.test(cl[0]!))
      throw new HttpError("a malformed Content-Length");
    return { kind: "length", length: Number(cl[0]) };
  }
  return otherwise;
}

/**
 * A request's body: chunked, a length, or none (a request is never delimited by a close).
 * Stricter than framingOf, since the request comes from the server the proxy guards, and the
 * upstream reads it after the proxy: wherever the two could read a body's end differently, the
 * bytes the proxy takes for the rest of one request's body the upstream would take for a request
 * of its own, which the proxy never read (no Host checked, no record), and whose body could
 * swallow the next request, released value and all. So only the framings every server reads
 * alike pass: a Transfer-Encoding in an HTTP/1.0 request (which RFC 9112 §6.1 has a server treat
 * as faulty, and older ones ignore, reading no body), a Content-Length that is not one field of
 * digits without leading zeros (`5, 5`, `,5`, empty: read as 5 by one parser, refused or 0 by
 * another; `010`, octal 8 to a C parser that lets strtol pick the base), and an empty
 * element in a Transfer-Encoding list are refused.
 */
export function requestFraming(h: RequestHead): Framing {
  for (let i = 0; i < h.names.length; i++) {
    const name = h.names[i]!.toLowerCase();
    if (name === "transfer-encoding") {
      if (h.minor === 0) throw new HttpError("a Transfer-Encoding in an HTTP/1.0 request");
      if (h.values[i]!.split(",").some((v) => v.trim() === ""))
        throw new HttpError("an empty element in Transfer-Encoding");
    } else if (name === "content-length" && !/^(?:0|[1-9]\d{0,14})$/.test(h.values[i]!))
      throw new HttpError("a malformed Content-Length");
  }
  if (headerList(h, "content-length").length > 1) throw new HttpError("more than one Content-Length");
  return framingOf(h, { kind: "length", length: 0 });
}

/** A response's body, given the request's method (RFC 9112 §6.3). */
export function responseFraming(h: ResponseHead, method: string): Framing {
  if (method === "HEAD" || h.status < 200 || h.status === 204 || h.status === 304)
    return { kind: "length", length: 0 };
  return framingOf(h, { kind: "close" });
}

/** Whether the connection ends after this message (HTTP/1.0 without keep-alive, or "close"). */
export function closes(h: Head & { minor: number }): boolean {
  const c = headerList(h, "connection");
  return c.includes("close") || (h.minor === 0 && !c.includes("keep-alive"));
}

/**
 * Follows a body through the chunks it arrives in: `take(buf, from)` says how many bytes of
 * `buf` from `from` belong to the body, and `done` once the body is complete. Chunked bodies
 * are followed through their size lines, data and trailers without being decoded.
 */
export class BodyMeter {
  done: boolean;
  private left: number;
  // chunked: "size" (reading a size line), "data" (left bytes of data), "crlf" (after data),
  // "trailer" (reading trailer lines until the empty one)
  private state: "size" | "data" | "crlf" | "trailer" = "size";
  private line = "";
  /**
   * Told each run of the body's own bytes as it is measured (a chunked body's data without its
   * size lines, CRLFs and trailers): for an answer whose body is rewritten (echo.ts)
   */
  onData: ((data: Buffer) => void) | null = null;

  constructor(private readonly framing: Framing) {
    this.left = framing.kind === "length" ? framing.length : 0;
    this.done = framing.kind === "length" && framing.length === 0;
  }

  /** the body ends when the connection does */
  get untilClose(): boolean {
    return this.framing.kind === "close";
  }

  take(buf: Buffer, from: number): number {
    if (this.done) return 0;
    if (this.framing.kind === "close") {
      if (from < buf.length) this.onData?.(from === 0 ? buf : buf.subarray(from));
      return buf.length - from;
    }
    if (this.framing.kind === "length") {
      const n = Math.min(this.left, buf.length - from);
      this.left -= n;
      if (this.left === 0) this.done = true;
      if (n > 0) this.onData?.(from === 0 && n === buf.length ? buf : buf.subarray(from, from + n));
      return n;
    }
    let i = from;
    while (i < buf.length && !this.done) {
      if (this.state === "data") {
        const n = Math.min(this.left, buf.length - i);
        if (n > 0) this.onData?.(buf.subarray(i, i + n));
        i += n;
        this.left -= n;
        if (this.left === 0) this.state = "crlf";
        continue;
      }
      // a line: size line, the CRLF after data, or a trailer line
      const nl = buf.indexOf(10, i);
      const end = nl < 0 ? buf.length : nl + 1;
      this.line += buf.toString("latin1", i, end);
      i = end;
      if (this.line.length > 8192) throw new HttpError("a chunk line too long");
      if (nl < 0) break;
      const line = this.line.endsWith("\r\n") ? this.line.slice(0, -2) : null;
      this.line = "";
      if (line === null) throw new HttpError("a chunk line not ended by CRLF");
      // a bare CR, or another control character, is a line's end to some parsers and not to others
      if (BAD_VALUE.test(line)) throw new HttpError("a control character in a chunk line");
      if (this.state === "crlf") {
        if (line !== "") throw new HttpError("chunk data longer than its size");
        this.state = "size";
      } else if (this.state === "size") {
        const m = /^([0-9a-fA-F]{1,12})(?:[ \t]*;.*)?$/.exec(line);
        if (!m) throw new HttpError("a malformed chunk size");
        this.left = Number.parseInt(m[1]!, 16);
        this.state = this.left === 0 ? "trailer" : "data";
      } else if (line === "") this.done = true;
    }
    return i - from;
  }
}
