/**
 * The console's ticket: a random value made once per console run, carried only by the links the
 * console hands the human (the URL `portcullis console` prints and opens, the request pages a
 * gateway prints) and by `console.json`, which only the user can read. Any local process can try
 * passphrases at the console's port, and every wrong one slows the next; were there one count
 * for everyone, anyone could keep it engaged and the human's right passphrase would wait for
 * ever. A browser that came by a ticketed link holds the ticket in a cookie, and its attempts
 * are counted apart (server.ts): nobody without the ticket can slow them.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { acceptedFromOther } from "../identity/otherUser.js";
import { TICKET_PARAM } from "./address.js";
import { redirect } from "./http.js";
import { sameToken } from "./sessions.js";

/** Named after the port, like the session cookie: two consoles side by side keep theirs apart. */
export function ticketCookie(port: number): string {
  return `portcullis_ticket_${port}`;
}

/**
 * Whether the request's cookies hold the ticket. Every value of the cookie's name is looked at,
 * not only the first: another web server on 127.0.0.1 can set (never read) cookies for this
 * port, and a junk one with a longer Path would be sent first.
 */
export function holdsTicket(header: string | undefined, port: number, ticket: string): boolean {
  const name = ticketCookie(port);
  let held = false;
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0 || part.slice(0, eq).trim() !== name) continue;
    // No early return: every value is compared, in constant time.
    if (sameToken(part.slice(eq + 1).trim(), ticket)) held = true;
  }
  return held;
}

/**
 * A GET that carries `?ticket=`: the ticket, when it is this run's, goes into an HttpOnly,
 * SameSite=Strict cookie, and the browser is sent to the same URL without it, so the ticket is
 * kept out of the history, the address bar and any Referer. A wrong ticket sets nothing.
 */
export function acceptTicket(
  res: ServerResponse,
  url: URL,
  port: number,
  ticket: string,
  cookies: string | undefined,
  liveSession: boolean,
): void {
  if (sameToken(url.searchParams.get(TICKET_PARAM), ticket)) {
    // The link the human was given always reaches this process (its ticket is new each run, so
    // no cache holds it). On the browser's first arrival this run, what an earlier server on this
    // port left there goes, before the redirect's /login is read (a cached page or script of its
    // own would stand for the console's; assetPaths.ts), with anything it stored for this origin.
    // Only then: the proof key the console's own page keeps there (assets.ts) would go with every
    // request link the human opens later, and a wrong ticket clears nothing. And the storage, where
    // that key is, only when the request brings no live session: a page on another port can drop
    // the ticket cookie (cookies are shared by every port of the host) and send the human's tab to
    // a ticketed link (the ticket is in console.json, which an agent running as the user reads),
    // and the key of a live session would go with it, its held proof unusable until the human
    // gives the passphrase again. Without a live session there is no held proof to lose.
    if (!holdsTicket(cookies, port, ticket))
      res.setHeader("Clear-Site-Data", liveSession ? '"cache"' : '"cache", "storage"');
    // The session cookie's attributes (handlers.ts), written here so that this module, which
    // address.ts and so every gateway loads, does not pull in the console's pages.
    res.setHeader("Set-Cookie", `${ticketCookie(port)}=${ticket}; HttpOnly; SameSite=Strict; Path=/`);
  }
  const rest = new URLSearchParams(url.searchParams);
  rest.delete(TICKET_PARAM);
  const query = rest.toString();
  redirect(res, `${url.pathname}${query ? `?${query}` : ""}`);
}

/**
 * Whether the request's connection may count as the ticket's holder's: not when it comes from
 * another user's process, as far as the kernel says. The ticket goes through the opener's command
 * line (xdg-open, the browser's), which other users can list; one who caught it there still shares
 * the count with everyone else. Deny first, as the egress proxy and the `--no-auth` front do
 * (src/identity/otherUser.ts, acceptedFromOther): on Linux an end the kernel does not list as a
 * live socket of this user is another's too. A process that wrote its login and closed its socket
 * before the console read it leaves such an end, and its wrong passphrases would otherwise land in
 * the ticket's count and make the human wait. Where there is no table to read (not Linux), none
 * is (docs/security.md says so).
 */
export function fromAnotherUser(req: IncomingMessage): boolean {
  return acceptedFromOther(req.socket) !== null;
}
