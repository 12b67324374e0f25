import type { IncomingMessage } from "node:http";
import { connect as netConnect, type Socket } from "node:net";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { chainDigest } from "../identity/index.js";

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
      ? tlsConnect({ host, port, servername: isIp(host) ? undefined : host, ALPNProtocols: ["http/1.1"] })
      : netConnect({ host, port });
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no connection within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.once(https ? "secureConnect" : "connect", () => {
      clearTimeout(timer);
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
