import type { IncomingMessage, InformationEvent, ServerResponse } from "node:http";

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
  let head = `HTTP/1.1 ${status} ${clean(info.statusMessage ?? "")}\r\n`;
  for (let i = 0; i + 1 < info.rawHeaders.length; i += 2) {
    const name = info.rawHeaders[i]!;
    const lower = name.toLowerCase();
    // the upstream's connection, not the client's
    if (lower === "connection" || lower === "keep-alive") continue;
    // a name holding a released value: dropped (its placeholder is no token; proxy.ts)
    if (clean(name) !== name) continue;
    head += `${name}: ${clean(info.rawHeaders[i + 1]!)}\r\n`;
  }
  head += "\r\n";
  // Node has no public way to write an interim head of any status with any headers:
  // writeProcessing writes 102 without headers, writeEarlyHints 103 only with a `Link` its own
  // pattern accepts (and drops the rest silently). Both write through `_writeRaw`, which this
  // uses the same way: it queues the head behind an earlier answer on the connection (a
  // pipelined request's) instead of writing into it. (latin1: header bytes as Node read them.)
  const raw = (res as unknown as { _writeRaw?: (data: string, encoding: string) => boolean })._writeRaw;
  if (typeof raw === "function") raw.call(res, head, "latin1");
}
