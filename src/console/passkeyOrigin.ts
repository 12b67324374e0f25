/**
 * Where passkeys work. Browsers refuse an IP address as a WebAuthn relying-party id, so passkeys
 * are registered and used on `http://localhost:PORT` (the Host check accepts it; `localhost` is a
 * secure context, and its cookies are its own: a session at 127.0.0.1 is not one at localhost).
 * Every passkey ceremony names this RP id and this exact origin, whatever the request carried.
 */
import type { IncomingMessage } from "node:http";
import { hostKey } from "../transport/httpAccess.js";

export const PASSKEY_RP_ID = "localhost";
export const PASSKEY_RP_NAME = "portcullis console";

/**
 * The console's passkey origin for its port: never built from a request's headers. Written as a
 * browser serialises it into a ceremony's answer (the URL parser's origin): on port 80, the
 * default port of http, `http://localhost`, not `http://localhost:80`, which no answer would carry.
 */
export function passkeyOrigin(port: number): string {
  return new URL(`http://${PASSKEY_RP_ID}:${port}`).origin;
}

/**
 * Whether this request reached the console by its passkey origin (the Host is already checked).
 * The Host is compared by value, as the rest of the console compares it (hostKey):
 * `LOCALHOST:PORT` names the same page as `localhost:PORT`, whose origin is the one a browser
 * writes into a ceremony's answer (it serialises the host lowercased). An address, in any
 * spelling, is not localhost: browsers refuse an IP address as the RP id.
 */
export function onPasskeyOrigin(req: IncomingMessage, port: number): boolean {
  const host = req.headers.host;
  return host !== undefined && hostKey(host) === `${PASSKEY_RP_ID}:${port}`;
}

/** A console URL (e.g. from console.json, at 127.0.0.1) moved to the passkey origin. */
export function atPasskeyOrigin(url: string): string {
  const u = new URL(url);
  u.hostname = PASSKEY_RP_ID;
  return u.toString().replace(/\/$/, "");
}
