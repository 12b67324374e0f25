import { type IncomingMessage, maxHeaderSize } from "node:http";
import { connect as netConnect, type Socket } from "node:net";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { chainDigest } from "../identity/index.js";
import { otherUserOf } from "../identity/otherUser.js";

/** A certificate chain as the record keeps it; null for http://. */
export type Chain = ReturnType<typeof chainDigest>;

/**
 * One fresh connection to the server's host and port (for https: a full TLS handshake, verified
 * against the system's CAs and NODE_EXTRA_CA_CERTS), then closed: the chain it presented.
 */
export function probeChain(url: URL, timeoutMs: number): Promise<Chain> {
  const https = url.protocol === "https:";
  const port = Number(url.port) || (https ? 443 : 80);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  return new Promise((resolve, reject) => {
    const sock: Socket = https
      ? tlsConnect({
          host,
          port,
          servername: isIp(host) ? undefined : host,
          ALPNProtocols: ["http/1.1"],
          // said, not left to node's default: NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment
          // would otherwise turn the check off (and NODE_NO_WARNINGS=1 its warning)
          rejectUnauthorized: true,
        })
      : netConnect({ host, port });
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no connection within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.once(https ? "secureConnect" : "connect", () => {
      clearTimeout(timer);
      const other = https ? null : listenerOfAnotherUser(sock);
      if (other !== null) {
        sock.destroy();
        reject(new Error(other));
        return;
      }
      const chain = https ? chainDigest((sock as TLSSocket).getPeerCertificate(true)) : null;
      sock.end();
      sock.destroy();
      resolve(chain);
    });
    sock.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/**
 * Why nothing may be sent on a plain-HTTP connection: the process listening at its other end is
 * another user's (the kernel's socket table, Linux); null when it is this user's or cannot be
 * told. A server over http:// has no certificate to say whose it is.
 */
export function listenerOfAnotherUser(sock: Socket): string | null {
  const uid = otherUserOf(sock);
  if (uid === null) return null;
  return `the process listening at ${sock.remoteAddress}:${sock.remotePort} is another user's (uid ${uid}); nothing was sent to it over http://`;
}

/** A response body as text, or null (and its size so far) once it grows over `maxBytes`. */
export function readBody(
  res: IncomingMessage,
  maxBytes: number,
  then: (text: string | null, bytes: number) => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  res.on("data", (b: Buffer) => {
    if (over) return;
    size += b.length;
    if (size > maxBytes) {
      over = true;
      chunks.length = 0;
      res.destroy();
      then(null, size);
      return;
    }
    chunks.push(b);
  });
  res.on("end", () => {
    if (!over) then(Buffer.concat(chunks).toString("utf8"), size);
  });
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * `msg` is an answer: no method and an id (whether or not it is well formed: the gateway answers
 * a malformed one naming an id in flight with response_invalid).
 */
export function isAnswer(msg: unknown): msg is { id: unknown } {
  return isObject(msg) && !("method" in msg) && "id" in msg;
}

/** `msg` is the response (result or error) to the request with id `id`. */
export function isResponseTo(msg: unknown, id: unknown): boolean {
  if (!isObject(msg) || "method" in msg) return false;
  return msg.id === id && ("result" in msg || "error" in msg);
}

function isIp(host: string): boolean {
  return /^[0-9.]+$/.test(host) || host.includes(":");
}

/**
 * Whether the body of a 400 that answered a request carrying our session id says the session is
 * gone. The standard's word for that is 404, but the SDKs' example servers, and the servers built
 * on them (server-everything), answer an unknown session id with 400 "Bad Request: No valid
 * session ID provided", and the SDK's transport handed a request for a session it never
 * initialized answers 400 "Bad Request: Server not initialized". Taken as lost when the error's
 * message (or a plain body) speaks of the session or of an uninitialized server: a wrong guess
 * costs a new epoch (list again, approve again), a missed one would let the next calls reach a
 * server the epoch does not describe. Any other 400 (a malformed request, an unsupported protocol
 * version) stays the request's own error.
 */
export function saysSessionLost(text: string): boolean {
  let said = text.slice(0, 2000);
  try {
    const parsed: unknown = JSON.parse(text);
    const error = isObject(parsed) ? parsed.error : undefined;
    if (isObject(error) && typeof error.message === "string") said = error.message;
  } catch {
    // a plain body: its own words
  }
  return /\bsession\b|not initiali[sz]ed/i.test(said);
}

/**
 * Why the server's answer could not be read at all, from node's HTTP parser (an `HPE_*` error
 * before the response's head was complete: a header over node's limit on a response's headers, a
 * character no header may hold), in words that quote nothing the server wrote but a header's
 * name, when it is a token of at most 64 characters; null for any other failure (a connection
 * refused or reset, which may be a lost session). The same question gets the same answer: such
 * a failure is the request's, not the session's, and asking again does not help.
 */
export function unreadableAnswer(e: Error): string | null {
  const err = e as Error & { code?: unknown; bytesParsed?: unknown; rawPacket?: unknown };
  const code = typeof err.code === "string" ? err.code : "";
  if (!code.startsWith("HPE_")) return null;
  if (code === "HPE_HEADER_OVERFLOW")
    return `its response headers are larger than node's ${Math.round(maxHeaderSize / 1024)} KiB limit (${code})`;
  const raw = Buffer.isBuffer(err.rawPacket) ? err.rawPacket : null;
  const at = typeof err.bytesParsed === "number" ? err.bytesParsed : -1;
  if (code === "HPE_INVALID_HEADER_TOKEN" && raw !== null && at >= 0 && at < raw.length) {
    // the line the parser stopped in: its name, and the byte it stopped at
    const start = raw.lastIndexOf(0x0a, at - 1) + 1;
    const colon = raw.indexOf(0x3a, start);
    const name = colon > start && colon < at ? raw.subarray(start, colon).toString("latin1") : "";
    const byte = `U+${raw[at]!.toString(16).toUpperCase().padStart(4, "0")}`;
    if (/^mcp-session-id$/i.test(name))
      return `its Mcp-Session-Id holds a character no header may hold (${byte}), so the session id could not be read, nor sent back on later requests`;
    if (/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/.test(name))
      return `its response header ${name} holds a character no header may hold (${byte})`;
  }
  return `its HTTP response is malformed (${code.slice(0, 40).replace(/[^A-Z0-9_]/g, "?")})`;
}

/**
 * What makes a session id the server gave unfit to be sent back in the Mcp-Session-Id header of
 * every later request, or null. MCP: a session id "MUST only contain visible ASCII characters
 * (ranging from 0x21 to 0x7E)". node reads a few others (a space or a tab inside, a byte past
 * 0x7E as latin1) but would send them back changed or refused, and the server would not know
 * its own session: every request then ended the epoch.
 */
export function unsendableSessionId(sid: string): string | null {
  const bad = /[^\x21-\x7e]/.exec(sid)?.[0];
  if (bad === undefined) return null;
  const what =
    bad === " "
      ? "a space"
      : `a character outside visible ASCII (U+${bad.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")})`;
  return `its Mcp-Session-Id holds ${what}, so the session id could not be sent back on later requests`;
}
