import { IncomingMessage, type InformationEvent, OutgoingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { Writable } from "node:stream";

/**
 * An interim answer (1xx) of the upstream to a request the proxy sent on in absolute form, given
 * on to the client before the final one, as a proxy must (RFC 9110 §15.2): `102 Processing`
 * keeps a client from giving up on a slow answer, `103 Early Hints` names what to preload. Inside
 * a tunnel the head is passed on as read (exchange.ts); here Node's client parses it, and the
 * head is written again from what it read.
 *
 * Not given on: to an HTTP/1.0 client, which cannot read one (a server must not send it one);
 * `100 Continue`, which Node's server says itself to a client that asked for it (`Expect`), before
 * the upstream could: a second would read as leave to send the body again; `101`, never relayed
 * (Node's client does not report it as interim: an upgrade nobody asked for fails the request).
 *
 * `clean` takes the released values out of the status text and each header value, as of a final
 * answer's head: an interim head can echo the key too (a `Link` built from the request's URL). A
 * header whose name holds one is dropped, as in the final answer (proxy.ts).
 *
 * How the head is written is found once, at the proxy's start (`interimWriting`), and an interim
 * head is dropped when no way works: a client cannot depend on one (the final answer follows), so
 * losing it costs a hint, where a way that throws, in the client's 'information' event, ended the
 * gateway (an uncaught exception).
 */
export function relayInterim(
  req: IncomingMessage,
  res: ServerResponse,
  info: InformationEvent,
  clean: (v: string) => string,
): void {
  const status = info.statusCode;
  if (status < 102 || status > 199) return;
  if (req.httpVersionMajor < 1 || (req.httpVersionMajor === 1 && req.httpVersionMinor < 1)) return;
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  const write = interimWriting().write;
  if (write === null) return;
  const headers: string[] = [];
  for (let i = 0; i + 1 < info.rawHeaders.length; i += 2) {
    const name = info.rawHeaders[i]!;
    const lower = name.toLowerCase();
    // the upstream's connection, not the client's
    if (lower === "connection" || lower === "keep-alive") continue;
    // a name holding a released value: dropped (its placeholder is no token; proxy.ts)
    if (clean(name) !== name) continue;
    headers.push(name, clean(info.rawHeaders[i + 1]!));
  }
  try {
    write(res, status, clean(info.statusMessage ?? ""), headers);
  } catch {
    // a way that passed the feature test and throws now (a header Node's own check refuses):
    // this head is dropped, the final answer follows
  }
}

/** Writes one interim head (status, its text, headers as name, value, name, value…) to `res`. */
type InterimWrite = (res: ServerResponse, status: number, text: string, headers: string[]) => void;

export interface InterimWriting {
  /** null: no way works on this Node, and interim heads are dropped */
  write: InterimWrite | null;
  /** which way: Node's public method, its internal one, or none */
  way: "writeInformation" | "_writeRaw" | "none";
}

/**
 * Node 20 has no public way to write an interim head of any status with any headers:
 * writeProcessing writes 102 without headers, writeEarlyHints 103 only with a `Link` its own
 * pattern accepts (and drops the rest silently). Node 26 added `response.writeInformation(status,
 * headers)` (nodejs/node#63155; not in 20 or 22), used where it works: it writes Node's own text
 * for the status, not the upstream's. Otherwise the internal `_writeRaw`, through which those
 * methods write, used the same way: it queues the head behind an earlier answer on the connection
 * (a pipelined request's) instead of writing into it (latin1: header bytes as Node read them).
 *
 * Each way is tried once on a response of no connection, over a sink in memory, and kept only if
 * it wrote exactly the head asked for: a Node that removed, renamed or changed the internal
 * method (or the public one) gets its interim heads dropped, never a crash or a head that is not
 * the one asked for.
 */
let found: InterimWriting | null = null;
export function interimWriting(): InterimWriting {
  if (found !== null) return found;
  const publicWay: InterimWrite = (res, status, _text, headers) => {
    (res as unknown as { writeInformation: (s: number, h: string[]) => void }).writeInformation(
      status,
      headers,
    );
  };
  const internalWay: InterimWrite = (res, status, text, headers) => {
    let head = `HTTP/1.1 ${status} ${text}\r\n`;
    for (let i = 0; i + 1 < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
    (res as unknown as { _writeRaw: (data: string, encoding: string) => boolean })._writeRaw(
      `${head}\r\n`,
      "latin1",
    );
  };
  const hasPublic = typeof (ServerResponse.prototype as unknown as Record<string, unknown>).writeInformation;
  const hasInternal = typeof (OutgoingMessage.prototype as unknown as Record<string, unknown>)._writeRaw;
  found =
    hasPublic === "function" && writesTheHead(publicWay, false)
      ? { write: publicWay, way: "writeInformation" }
      : hasInternal === "function" && writesTheHead(internalWay, true)
        ? { write: internalWay, way: "_writeRaw" }
        : { write: null, way: "none" };
  return found;
}

let told = false;
/**
 * The warning a proxy's start gives, once per process, when interim heads will be dropped (the
 * feature test found no way that works on this Node); null otherwise, or once it was given.
 */
export function interimWarning(): string | null {
  if (told || interimWriting().write !== null) return null;
  told = true;
  return `egress: this Node (${process.version}) has no way the proxy can use to write an interim answer (1xx): an upstream's 102 or 103 to a request sent in absolute form is not given on, its final answer is`;
}

/**
 * Whether `write` puts a 103 with two headers on a response's connection, as bytes a client reads
 * as that interim head, and nothing else; `givenText`: with the status text given (the public way
 * writes Node's own).
 */
function writesTheHead(write: InterimWrite, givenText: boolean): boolean {
  const out: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer | string, encoding, cb) {
      out.push(typeof chunk === "string" ? Buffer.from(chunk, encoding) : chunk);
      cb();
    },
  });
  try {
    const req = new IncomingMessage(null as unknown as Socket);
    req.httpVersionMajor = 1;
    req.httpVersionMinor = 1;
    req.method = "GET";
    const res = new ServerResponse(req);
    res.assignSocket(sink as unknown as Socket);
    write(res, 103, "Probe", ["Link", "</probe.css>; rel=preload", "X-Probe", "1"]);
    res.detachSocket(sink as unknown as Socket);
    const head = Buffer.concat(out).toString("latin1");
    const status = givenText ? "HTTP/1.1 103 Probe\r\n" : /^HTTP\/1\.1 103 [^\r\n]*\r\n/.exec(head)?.[0];
    return (
      status !== undefined &&
      head === `${status}Link: </probe.css>; rel=preload\r\nX-Probe: 1\r\n\r\n` &&
      !res.headersSent
    );
  } catch {
    return false;
  } finally {
    sink.destroy();
  }
}
