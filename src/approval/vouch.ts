/**
 * What a gateway can prove about the approval requests it made, that a process writing the store
 * cannot forge. Any process of the user can write a request row, and one that copies a running
 * gateway's run id (so its pid, start time and command line are a real gateway's) reads as that
 * gateway's: `approve --next` could take it, and the lists show it as waiting. So for each request
 * it stores, a gateway holds a listening abstract unix socket (Linux) whose name is the request's
 * id and a digest of its review, bound before the row is written and closed once the row is no
 * longer pending; a reader asks the kernel which sockets the gateway process holds
 * (src/identity/procSockets.ts). A forged row has no such socket in the gateway's file
 * descriptors, and no other process can put one there (short of ptrace, docs/security.md).
 *
 * The name binds the review (what the human is shown and signs): a row rewritten with another
 * review is not vouched for either. Nothing connects to the socket: one that does is closed.
 * Where abstract sockets do not exist (not Linux) nothing is bound, and readers cannot tell
 * (`null`): they go by the gateway's command line alone, as before.
 */
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:net";
import { processStartTime } from "../identity/proc.js";
import { runsPortcullisCommand } from "../identity/procPortcullis.js";
import { heldAbstractSockets } from "../identity/procSockets.js";
import type { Store } from "../store/db.js";
import { reviewDigest } from "./decision.js";
import type { ApprovalRequest } from "./requests.js";
import { getRun } from "./runs.js";

const PREFIX = "portcullis-request/v1/";

/** The abstract socket name that vouches for request `id` with `review` (at most 92 bytes of the 107 an address holds). */
export function requestSocketName(id: string, review: unknown): string {
  const digest = createHash("sha256").update(reviewDigest(review)).digest("base64url");
  return `${PREFIX}${id}/${digest}`;
}

/**
 * The mark a listed request gets when its gateway does not vouch for its row: under its card in
 * `portcullis approvals` and on the console's Requests page, in the same words.
 */
export const NOT_VOUCHED_NOTE =
  "not vouched: its gateway holds no mark of this request with this review: the row was written by another process, or rewritten since; decide it by its ID only if a gateway printed that ID for you";

/** Whether this platform has abstract unix sockets (Linux): elsewhere no gateway vouches, and none is asked. */
export const CAN_VOUCH = process.platform === "linux";

/**
 * How many requests one gateway process vouches for at once: each is a file descriptor. Past it,
 * the oldest is let go (its request, if still pending, is then passed by `--next` like a forged
 * one and can be decided by its ID): an agent that makes a thousand requests nobody decides has
 * worn the human down already.
 */
const MAX_VOUCHED = 1024;

/** How often the gateway lets go of the sockets of requests no longer pending (decided, expired, cancelled by anyone). */
const RELEASE_EVERY_MS = 5_000;

interface Held {
  server: Server;
  db: Store;
}

const held = new Map<string, Held>();
let releaseTimer: NodeJS.Timeout | null = null;

/**
 * Binds the socket that vouches for request `id` (before its row is written: no reader sees the
 * row unvouched). Returns false when it could not be bound (not Linux, or the bind failed): the
 * request is stored all the same, and readers pass it by as they would a forged one.
 */
export function vouchFor(db: Store, id: string, review: unknown): boolean {
  if (!CAN_VOUCH) return false;
  const name = requestSocketName(id, review);
  const server = createServer((socket) => socket.destroy());
  server.on("error", () => {
    // a name taken (only a bug, or another process guessing a review's digest before the row
    // exists) or no descriptor left: the request is then not vouched for, which readers say
    held.delete(id);
  });
  try {
    // bound and listening when listen returns (a pipe's handle is made synchronously)
    server.listen({ path: `\0${name}`, backlog: 1 });
  } catch {
    return false;
  }
  if (!server.listening) {
    server.close();
    return false;
  }
  server.unref();
  held.set(id, { server, db });
  while (held.size > MAX_VOUCHED) {
    const oldest = held.keys().next().value as string;
    letGo(oldest);
  }
  if (!releaseTimer) {
    releaseTimer = setInterval(releaseClosed, RELEASE_EVERY_MS);
    releaseTimer.unref();
  }
  return true;
}

/** Lets go of the socket of request `id` (its row was not written, or it is no longer pending). */
export function letGo(id: string): void {
  const h = held.get(id);
  if (!h) return;
  held.delete(id);
  h.server.close();
  if (held.size === 0 && releaseTimer) {
    clearInterval(releaseTimer);
    releaseTimer = null;
  }
}

/** The statement the release tick asks with, prepared once per store (held requests share a store). */
const pendingStatements = new WeakMap<Store, ReturnType<Store["prepare"]>>();

function stillPendingStatement(db: Store): ReturnType<Store["prepare"]> {
  let read = pendingStatements.get(db);
  if (!read) {
    read = db.prepare("SELECT 1 FROM approval_requests WHERE request = ? AND state = 'pending'");
    pendingStatements.set(db, read);
  }
  return read;
}

/** The requests this process vouches for that are no longer pending in the store, let go. */
function releaseClosed(): void {
  for (const [id, h] of [...held]) {
    let pending: boolean;
    try {
      pending = stillPendingStatement(h.db).get(id) !== undefined;
    } catch {
      // the store closed (the gateway is ending) or held: asked again at the next round
      continue;
    }
    if (!pending) letGo(id);
  }
}

/**
 * Whether the gateway of `req`'s run vouches for it: true when the process its run row names (pid
 * and start time) runs portcullis's `run` by its command line and holds the request's socket;
 * false when it does not (a row another process wrote, a review rewritten since, a gateway whose
 * sockets cannot be read); null where no gateway can vouch (not Linux). `cache` keeps each
 * process's sockets for one listing.
 */
export function gatewayVouches(
  db: Store,
  req: Pick<ApprovalRequest, "request" | "agentRun" | "review">,
  cache: Map<string, Set<string> | null> = new Map(),
): boolean | null {
  if (!CAN_VOUCH) return null;
  const run = getRun(db, req.agentRun);
  if (!run || run.gatewayPidStart === null) return false;
  const pid = run.gatewayPid;
  const key = `${pid}:${run.gatewayPidStart}`;
  let names = cache.get(key);
  if (names === undefined) {
    names = runsPortcullisCommand(pid, "run", run.gatewayPidStart) ? heldAbstractSockets(pid) : null;
    // the same process still (a pid reused between the reads would lend another's sockets)
    if (names !== null && processStartTime(pid) !== run.gatewayPidStart) names = null;
    cache.set(key, names);
  }
  if (names === null) return false;
  try {
    return names.has(requestSocketName(req.request, req.review));
  } catch {
    return false; // a review that cannot be digested is none a gateway wrote
  }
}
