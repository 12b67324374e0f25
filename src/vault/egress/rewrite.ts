import { Transform, type TransformCallback } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate, createInflateRaw } from "node:zlib";
import { EchoScrubber, type Spelling } from "./echo.js";

/**
 * The answer to a request that carried a released value, when it has a body: the body is read
 * (decoded when the upstream compressed it) and given on with the values taken out (echo.ts), so
 * its length is no longer the upstream's. An answer with a length, no content coding, and all of
 * it in the read that brought its head (most small answers) is scrubbed whole and keeps a
 * Content-Length, written again only when a value was taken out (exchange.ts, `whole`). Any
 * other goes through RewrittenBody: the head goes on without its Content-Length,
 * Transfer-Encoding and (when decoded) Content-Encoding, and the body in chunks of its own to a
 * client that spoke HTTP/1.1, or delimited by the connection's close to one that spoke HTTP/1.0.
 * Requests that carry a value ask for `Accept-Encoding: identity`; an upstream that compresses
 * anyway in gzip, deflate or br is decoded here, and one in any other coding (or several) is
 * refused: a body the proxy cannot read is a body it cannot take the value out of.
 */

/** Answer headers that describe the body as the upstream framed and encoded it. */
const FRAMED = new Set(["content-length", "transfer-encoding"]);

/** What Accept-Encoding a request that carries a released value is sent with. */
export const IDENTITY_ONLY = "identity";

export type Plan =
  | { head: Buffer; decoder: Transform | null; chunked: boolean; closes: boolean }
  | { refused: string };

/** A decoder for a Content-Encoding the proxy reads, or null for one it does not. */
function decoderFor(coding: string): Transform | null {
  if (coding === "gzip" || coding === "x-gzip") return createGunzip();
  if (coding === "deflate") return new AnyDeflate();
  if (coding === "br") return createBrotliDecompress();
  return null;
}

/**
 * Whether two bytes start a zlib stream (RFC 1950): the method deflate (8) in the low bits of the
 * first, and the two, read as one 16-bit number, a multiple of 31.
 */
function zlibHeader(b0: number, b1: number): boolean {
  return (b0 & 0x0f) === 8 && ((b0 << 8) | b1) % 31 === 0;
}

/**
 * `Content-Encoding: deflate` as servers send it: RFC 9110 says a zlib stream, and some (older
 * IIS, some PHP and embedded servers) send raw deflate without the zlib header, which
 * createInflate refuses. Like browsers and curl, the first two bytes decide: a zlib header, read
 * with createInflate; anything else, as raw deflate (createInflateRaw). A body that is neither
 * still fails to decode, and is cut (fail closed).
 */
class AnyDeflate extends Transform {
  private inner: Transform | null = null;
  private start: Buffer = Buffer.alloc(0);

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    if (this.inner) {
      this.inner.write(chunk, () => cb());
      return;
    }
    this.start = this.start.length === 0 ? chunk : Buffer.concat([this.start, chunk]);
    if (this.start.length < 2) {
      cb();
      return;
    }
    this.begin().write(this.start, () => cb());
    this.start = Buffer.alloc(0);
  }

  override _flush(cb: TransformCallback): void {
    // an empty body is an empty body; one of a single byte is no stream of either kind
    if (!this.inner && this.start.length === 0) {
      cb();
      return;
    }
    const inner = this.inner ?? this.begin();
    if (this.start.length > 0) inner.write(this.start);
    inner.once("end", () => cb());
    inner.end();
  }

  override _destroy(e: Error | null, cb: (e: Error | null) => void): void {
    this.inner?.destroy();
    cb(e);
  }

  private begin(): Transform {
    const s = this.start;
    const inner = s.length >= 2 && zlibHeader(s[0]!, s[1]!) ? createInflate() : createInflateRaw();
    inner.on("data", (d: Buffer) => this.push(d));
    inner.on("error", (e: Error) => this.destroy(e));
    this.inner = inner;
    return inner;
  }
}

/**
 * How a body in these content codings (as the Content-Encoding header lists them, lower case) is
 * read: undecoded (none, or identity), through one decoder, or refused (an unknown coding, or more
 * than one, which would need decoders the proxy does not chain).
 */
export function decoding(codings: readonly string[]): { decoder: Transform | null } | { refused: string } {
  const coded = codings.filter((c) => c !== "identity");
  const decoder = coded.length === 1 ? decoderFor(coded[0]!) : null;
  if (coded.length > 1 || (coded.length === 1 && decoder === null))
    return {
      refused: `an answer in Content-Encoding ${JSON.stringify(coded.join(", ").slice(0, 100))}, which the proxy cannot decode to take the released value out of it (it asked for identity; it reads gzip, deflate and br); nothing of the answer was passed on`,
    };
  return { decoder };
}

/**
 * The head the client gets for an answer whose body is rewritten (`head`: the answer's head with
 * the values already taken out, CRLF lines), and how its body is decoded and framed; or why it is
 * refused (a Content-Encoding that is not one of gzip, deflate, br, or more than one).
 */
export function planRewrite(head: Buffer, clientMinor: number): Plan {
  const lines = head.toString("latin1").split("\r\n");
  const kept: string[] = [];
  const codings: string[] = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === "") continue;
    const name = line.slice(0, line.indexOf(":")).toLowerCase();
    if (FRAMED.has(name)) continue;
    if (name === "content-encoding") {
      for (const c of line.slice(line.indexOf(":") + 1).split(","))
        if (c.trim() !== "") codings.push(c.trim().toLowerCase());
      continue;
    }
    // a client of HTTP/1.0 gets the body delimited by the close: its connection is not kept
    if (clientMinor === 0 && (name === "connection" || name === "keep-alive")) continue;
    kept.push(line);
  }
  const d = decoding(codings);
  if ("refused" in d) return d;
  const decoder = d.decoder;
  // (the encoding the upstream gave stays named when it is identity, or when nothing is decoded)
  if (decoder === null && codings.length > 0) kept.push(`content-encoding: ${codings.join(", ")}`);
  const chunked = clientMinor === 1;
  // the proxy writes the body's framing, so the status line is its own version's
  const status = lines[0]!.replace(/^HTTP\/1\.[01]/, "HTTP/1.1");
  kept.push(chunked ? "transfer-encoding: chunked" : "connection: close");
  return {
    head: Buffer.from(`${status}\r\n${kept.join("\r\n")}\r\n\r\n`, "latin1"),
    decoder,
    chunked,
    closes: !chunked,
  };
}

/**
 * Whether a head names a Content-Encoding at all (identity included: rare, and then the general
 * path reads it). A body without one whose bytes all came with the head is scrubbed whole, and
 * keeps a Content-Length (withLength), with no chunks of the proxy's own.
 */
export function coded(head: Buffer): boolean {
  return /\r\ncontent-encoding:/i.test(head.toString("latin1"));
}

/** A head (CRLF lines) with its Content-Length lines saying `length`. */
export function withLength(head: Buffer, length: number): Buffer {
  return Buffer.from(
    head.toString("latin1").replace(/\r\ncontent-length:[^\r]*/gi, `\r\nContent-Length: ${length}`),
    "latin1",
  );
}

const CRLF = Buffer.from("\r\n", "latin1");
const LAST_CHUNK = Buffer.from("0\r\n\r\n", "latin1");

/**
 * A rewritten body: `write` each run of the upstream's body bytes (as framed, not yet decoded),
 * `flush` once a piece the upstream sent is written, `end` when the upstream's body is complete,
 * then `then` runs once everything is given on. What is given of one piece goes in one write to
 * `out`, the head before the first (one TLS record for a small answer, not four). `out` gets only
 * bytes with the values taken out; on a failure (`fail`: the decoder's error) nothing more is
 * given, and what was kept is dropped with it.
 */
export class RewrittenBody {
  private readonly scrubber: EchoScrubber;
  private failed = false;
  private ending = false;
  /** the head, until it goes with the body's first bytes */
  private head: Buffer | null;
  /** the body's bytes ready to be given (values taken out), framed when given: one chunk per write */
  private ready: Buffer[] = [];

  constructor(
    spellings: readonly Spelling[],
    private readonly plan: Extract<Plan, { head: Buffer }>,
    private readonly out: (b: Buffer) => void,
    private readonly fail: (e: Error) => void,
  ) {
    this.scrubber = new EchoScrubber(spellings);
    this.head = plan.head;
    const d = plan.decoder;
    if (d) {
      d.on("data", (b: Buffer) => {
        this.keep(this.scrubber.push(b));
        this.flush();
      });
      d.on("error", (e: Error) => {
        if (this.failed) return;
        this.failed = true;
        this.ready = [];
        this.fail(new Error(`the answer's body could not be decoded (${e.message})`));
      });
    }
  }

  write(data: Buffer): void {
    if (this.failed) return;
    if (this.plan.decoder) this.plan.decoder.write(data);
    else this.keep(this.scrubber.push(data));
  }

  /** Gives on what is ready (and the head, the first time; the last chunk, at the end). */
  flush(ending = false): void {
    if (this.failed) return;
    const parts: Buffer[] = this.head ? [this.head] : [];
    this.head = null;
    const data = this.ready.length === 1 ? this.ready[0]! : Buffer.concat(this.ready);
    this.ready = [];
    if (data.length > 0) {
      if (this.plan.chunked) parts.push(Buffer.from(`${data.length.toString(16)}\r\n`, "latin1"), data, CRLF);
      else parts.push(data);
    }
    if (ending && this.plan.chunked) parts.push(LAST_CHUNK);
    if (parts.length > 0) this.out(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  }

  end(then: () => void): void {
    // (once: a second end would give a second last chunk, which the client reads as a response)
    if (this.failed || this.ending) return;
    this.ending = true;
    const last = () => {
      if (this.failed) return;
      this.keep(this.scrubber.end());
      this.flush(true);
      then();
    };
    const d = this.plan.decoder;
    if (!d) {
      last();
      return;
    }
    // (a decoder emits `end` only once its output is read: it flows, through the `data` listener)
    d.once("end", last);
    d.end();
  }

  /** Whether the head went on to the client (then a failure can only cut the answer). */
  get begun(): boolean {
    return this.head === null;
  }

  /** Stops: nothing more is given (the tunnel closed, or the upstream failed). */
  stop(): void {
    this.failed = true;
    this.ready = [];
    this.plan.decoder?.destroy();
  }

  private keep(b: Buffer): void {
    if (!this.failed && b.length > 0) this.ready.push(b);
  }
}
