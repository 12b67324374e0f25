/**
 * The console's HTTP edge: the headers every response carries, the Host and Origin checks, the
 * cookie and form parsing. Nothing here knows about pages or sessions.
 */
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { hostNamesOneOf, hostsOfSockets, originOfHost } from "../transport/httpAccess.js";

export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const SECURITY_HEADERS: readonly (readonly [string, string])[] = [
  ["Content-Security-Policy", CSP],
  ["X-Content-Type-Options", "nosniff"],
  // Not "no-referrer": under it Chromium sends `Origin: null` with every form POST, and the
  // Origin check below could never pass. "same-origin" sends nothing to any other origin.
  ["Referrer-Policy", "same-origin"],
  ["X-Frame-Options", "DENY"],
  ["Cross-Origin-Opener-Policy", "same-origin"],
  ["Cross-Origin-Resource-Policy", "same-origin"],
  ["Cache-Control", "no-store"],
];

/** Set on every response, whatever it is (no CORS header is ever set). */
export function securityHeaders(res: ServerResponse): void {
  for (const [name, value] of SECURITY_HEADERS) res.setHeader(name, value);
}

const TOO_LONG =
  "refused: this request's line and headers are longer than the console takes (16 KiB in all). Nothing was done. Open the page from the console's own links.\n";

/**
 * node's answer to a request its parser refused (400; 431 for headers over its limit; 408 for a
 * request not received in time), written on the socket since no handler runs for it. node's own
 * carries none of the headers above: these do, like every other answer of the console.
 */
export function parserRefusal(err: NodeJS.ErrnoException, socket: Duplex): void {
  const sent = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  if (err.code === "ECONNRESET" || !socket.writable || sent) {
    socket.destroy();
    return;
  }
  const status =
    err.code === "HPE_HEADER_OVERFLOW" ? 431 : err.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : 400;
  const head = SECURITY_HEADERS.map(([name, value]) => `${name}: ${value}\r\n`).join("");
  // a page the human opened by a link: a blank one said nothing of why
  const body = status === 431 ? TOO_LONG : "";
  const type = body ? "Content-Type: text/plain; charset=utf-8\r\n" : "";
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${head}${type}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * DNS rebinding: a page on evil.test whose name now resolves to 127.0.0.1 reaches this port with
 * `Host: evil.test:PORT`. Ours are `hosts` (consoleHosts): localhost and the addresses the
 * console's sockets are bound to, in each spelling that reaches them, with our exact port. The
 * same comparison `run --listen` makes (src/transport/httpAccess.ts), so the two cannot differ.
 */
export function hostAllowed(host: string | undefined, hosts: ReadonlySet<string>): boolean {
  return hostNamesOneOf(host, hosts);
}

/**
 * The console's own hosts, for the addresses its sockets are bound to (127.0.0.1, and ::1 where
 * it holds it): `127.0.0.1:PORT` (also written `[::ffff:7f00:1]:PORT`, which reaches the same
 * socket), `[::1]:PORT` only when it listens there, and `localhost:PORT`. No other name. The rule
 * is run --listen's (hostsOfSockets), so the two cannot drift apart.
 */
export function consoleHosts(boundAddresses: readonly string[], port: number): ReadonlySet<string> {
  return hostsOfSockets(boundAddresses, port);
}

/**
 * The origin a state change must come from: the page of the host the request's (already
 * checked) Host names, by value, as a browser writes its origin (originOfHost). A browser sends
 * Host and Origin from the one URL, so they agree; a client that wrote the Host in another
 * spelling of the same address or name (`[0::1]`, `LOCALHOST`) is not refused for it. The
 * Origin itself is compared as written: only the serialization a browser sends passes, and an
 * Origin of another host, port or scheme never does.
 */
export function originAllowed(origin: string | undefined, host: string | undefined): boolean {
  const own = originOfHost(host);
  return origin !== undefined && own !== null && origin === own;
}

/**
 * Every value of every cookie, in the order sent. A name may come several times: cookies are not
 * kept apart by port, so a web server on another loopback port can set one named like ours with
 * a longer Path (`Path=/requests`), and browsers send that one first. A reader must weigh every
 * value (the one naming a live session, the one matching a token), never only the first.
 */
export function parseCookies(header: string | undefined): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    const values = out.get(name);
    if (values) values.push(value);
    else out.set(name, [value]);
  }
  return out;
}

/** The values of one cookie in a request (none: an empty list). */
export function cookieValues(req: IncomingMessage, name: string): string[] {
  return parseCookies(req.headers.cookie).get(name) ?? [];
}

export class BodyError extends Error {
  override name = "BodyError";
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

const MAX_FORM_BYTES = 64 * 1024;

/** An `application/x-www-form-urlencoded` body, at most 64 KiB. */
export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  return new URLSearchParams((await readBody(req, "application/x-www-form-urlencoded")).toString("utf8"));
}

/** An `application/json` body (for routes that declare `body: "json"`), at most 64 KiB. */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  const text = (await readBody(req, "application/json")).toString("utf8");
  try {
    return JSON.parse(text);
  } catch {
    throw new BodyError("the body is not valid JSON", 400);
  }
}

async function readBody(req: IncomingMessage, expected: string): Promise<Buffer> {
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== expected) {
    req.resume();
    throw new BodyError(`a ${expected} body is expected`, 415);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_FORM_BYTES) throw new BodyError("the form is too large", 413);
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

export function sendHtml(res: ServerResponse, status: number, body: string): void {
  res.statusCode = status;
  res.setHeader("Content-Type", "text/html; charset=utf-8");
  res.end(body);
}

export function sendText(res: ServerResponse, status: number, body: string): void {
  res.statusCode = status;
  res.setHeader("Content-Type", "text/plain; charset=utf-8");
  res.end(`${body}\n`);
}

/** 303 after a POST, to a path of ours only (never a URL taken from input). */
export function redirect(res: ServerResponse, path: string): void {
  const safe = path.startsWith("/") && !path.startsWith("//") ? path : "/";
  res.statusCode = 303;
  res.setHeader("Location", safe);
  res.end();
}
