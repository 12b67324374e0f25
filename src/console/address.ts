/**
 * Where the console of a state directory can be reached. The console writes `console.json` in
 * the state directory when it starts listening and removes it when it stops; gateways read it to
 * put the console's address in refusals and URL-mode elicitations, and to know whether they must
 * start one. Besides the loopback URL and the owner process it carries the console's ticket
 * (ticket.ts), which only links handed to the human may carry: refusals and elicitations, which an
 * agent reads, get the plain URL.
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { processStartTime } from "../identity/proc.js";
import { KNOWN_SCHEMA_VERSION, recordedSchemaVersion } from "../store/schemaVersion.js";
import { writeFileAtomic } from "../util/atomicFile.js";

export interface ConsoleAddress {
  /** Base URL, e.g. `http://127.0.0.1:7345` (no trailing slash). */
  url: string;
  pid: number;
  /** The owner's start time as `processStartTime` reports it, so a reused pid is not trusted. */
  startTime: string | null;
  /** The console's ticket (ticket.ts); null from a console that published none. */
  ticket: string | null;
  /**
   * The store schema version the console runs, as it recorded it (store/schemaVersion.ts:
   * "unreadable" when what it recorded is no version); undefined from a console of a portcullis
   * that recorded none, whose version is inferred from the file's time (olderConsole.ts).
   */
  schemaVersion?: number | "unreadable";
}

export function consoleAddressPath(stateDir: string): string {
  return join(stateDir, "console.json");
}

/** Written atomically (src/util/atomicFile.ts), mode 0600. */
export function writeConsoleAddress(
  stateDir: string,
  url: string,
  ticket: string | null = null,
): ConsoleAddress {
  const address: ConsoleAddress = {
    url,
    pid: process.pid,
    startTime: processStartTime(process.pid),
    ticket,
    // the schema this console runs: it opened the store before it listens (store/schemaVersion.ts)
    schemaVersion: KNOWN_SCHEMA_VERSION,
  };
  const path = consoleAddressPath(stateDir);
  writeFileAtomic(path, `${JSON.stringify(address)}\n`);
  return address;
}

/** Removes the file only if this process wrote it. */
export function clearConsoleAddress(stateDir: string): void {
  const current = readConsoleAddress(stateDir);
  if (current && current.pid === process.pid) rmSync(consoleAddressPath(stateDir), { force: true });
}

/** The running console's address, or null when there is none (no file, bad file, owner gone). */
export function readConsoleAddress(stateDir: string): ConsoleAddress | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(consoleAddressPath(stateDir), "utf8"));
  } catch {
    return null;
  }
  if (!parsed || typeof parsed !== "object") return null;
  const { url, pid, startTime, ticket, schemaVersion } = parsed as Record<string, unknown>;
  if (typeof url !== "string" || !/^http:\/\/127\.0\.0\.1:\d{1,5}$/.test(url)) return null;
  if (typeof pid !== "number" || !Number.isInteger(pid) || pid <= 0) return null;
  const alive = processStartTime(pid);
  if (alive === null || (typeof startTime === "string" && alive !== startTime)) return null;
  return {
    url,
    pid,
    startTime: typeof startTime === "string" ? startTime : null,
    ticket: typeof ticket === "string" && /^[A-Za-z0-9_-]{1,128}$/.test(ticket) ? ticket : null,
    schemaVersion: recordedSchemaVersion(schemaVersion),
  };
}

/** The query parameter a ticketed link carries (ticket.ts: what the console does with it). */
export const TICKET_PARAM = "ticket";

/**
 * `url` (the console's base URL and a path of ours) with the ticket, when there is one. Here, not
 * in ticket.ts, so that a gateway printing a link loads none of the console's request handling.
 */
export function ticketedLink(url: string, ticket: string | null): string {
  if (!ticket) return url;
  return `${url}${url.includes("?") ? "&" : "?"}${TICKET_PARAM}=${encodeURIComponent(ticket)}`;
}

/** The link for the human to `path` of the console (`/` by default), with its ticket. */
export function humanLink(address: ConsoleAddress, path = "/"): string {
  return ticketedLink(`${address.url}${path}`, address.ticket);
}

/**
 * The console page of one approval request. The URL names the request and carries no token: it
 * goes into refusals and elicitations too (humanLink adds the ticket for the human's own links).
 */
export function requestPageUrl(base: string, requestId: string): string {
  return `${base}/requests/${encodeURIComponent(requestId)}`;
}
