/**
 * The terminal side of reaching the human: `portcullis approvals --watch` (a live list of the
 * pending requests, redrawn when one appears or is decided) and the question `approve --next`
 * asks on the terminal.
 */
import { createHash } from "node:crypto";
import { closeSync, openSync, writeSync } from "node:fs";
import { ReadStream } from "node:tty";
import { renderReview, renderReviewCard } from "../approval/render.js";
import {
  getRequest,
  listedPending,
  type PendingRequest,
  pendingPage,
  pendingRequests,
} from "../approval/requests.js";
import { getRun } from "../approval/runs.js";
import { gatewayVouches, NOT_VOUCHED_NOTE } from "../approval/vouch.js";
import { safeText } from "../catalog/text.js";
import { runsPortcullisCommand } from "../identity/procPortcullis.js";
import type { Store } from "../store/db.js";
import { quotedCommand, stateDirFlagFor } from "../store/stateDir.js";
import { StoreFiles } from "../store/storeFiles.js";
import { printableJson } from "../util/printableJson.js";
import { EXIT_OK, UsageError } from "./errors.js";
import { pendingStamp } from "./pendingStamp.js";
import { drawnOrUnreadable, requestJson, unreadableReview } from "./unreadableReview.js";
import { callWaitKey, FollowedRequests, forEachPendingKey, type PendingKey } from "./watchedRows.js";

/** How often the store's stamp is read while watching (the rows only when it changed). */
const WATCH_POLL_MS = 500;

/**
 * What a sweep could not close (approvals.ts): the line it said on stderr, and whether it is tried
 * again at each tick (`retry`): another process held the store's write lock (locked or busy),
 * which it may let go at any time, or the file system refused the write (a full disk), which may
 * have room again at any time. Neither end writes anything, so the store's stamp does not move.
 */
export interface Unclosed {
  line: string;
  retry: boolean;
}

/** The request `approve --next` / `deny --next` decides, and why it was picked, in words. */
export interface NextPick {
  req: PendingRequest;
  why: string;
}

/** What `--next` found: the request it decides (null: none) and the ones it passed by unread. */
export interface NextChoice {
  pick: NextPick | null;
  /**
   * Pending requests a gateway would wait for by their rows, whose gateway is not, by its command
   * line as read here, portcullis running `run` (src/identity/procPortcullis.ts): passed by.
   */
  notPortcullis: PendingRequest[];
  /**
   * Pending requests whose gateway is portcullis's `run` by its command line but does not vouch
   * for the row (src/approval/vouch.ts: it holds no mark of the request, with its review): a row
   * another process wrote naming a real gateway's run, or a review rewritten since. Passed by.
   */
  notVouched: PendingRequest[];
}

/**
 * The request `--next` decides: the oldest pending request a call waits on now, since deciding it
 * answers a call held for it (an older one whose call the client cancelled, or whose wait ran
 * out, serves at most a retry, or the run's later calls); when no call waits on any, the oldest
 * whose gateway is alive, as before (its decision still serves a retry, a session grant the run's
 * later calls). A request whose gateway runs an older portcullis records nothing of its calls: it
 * is never taken for one a call waits on. `stateDir`: the one the `approvals` its line names must
 * look in.
 *
 * Any process of the user can write rows into the store: a run naming the pid and start time of
 * the user's editor reads as a live gateway, and its request, dated first, would be the one
 * `--next` takes. Only a request whose gateway is, by its command line, portcullis's `run` with
 * the recorded start time is taken; the others are returned, for the command to say it passed
 * them by (`approve ID` still decides one, once the human has read it). A gateway whose command
 * line cannot be read here (another PID namespace, no /proc entry for it) is one of those: deny
 * first. A row that copies a real gateway's run passes that check: it must also be one the
 * gateway vouches for (src/approval/vouch.ts), else it is returned among `notVouched`. And the
 * line says how many newer requests wait beside the one taken, so that the human knows it is not
 * the only one.
 */
export function nextDecidable(db: Store, stateDir?: string): NextChoice {
  // a request whose stored review cannot be read is never picked: nobody can decide it (unreadableReview.ts)
  const usable = pendingRequests(db).filter((r) => r.waiting && unreadableReview(r) === null);
  const ours = new Map<string, boolean>();
  const isOurs = (r: PendingRequest): boolean => {
    let known = ours.get(r.agentRun);
    if (known === undefined) {
      const run = getRun(db, r.agentRun);
      known = run !== null && runsPortcullisCommand(run.gatewayPid, "run", run.gatewayPidStart);
      ours.set(r.agentRun, known);
    }
    return known;
  };
  // and the gateway vouches for the row: a row that copies a running gateway's run (its pid,
  // start time and command line a real gateway's) is not one it made (vouch.ts); where no gateway
  // can vouch (not Linux: null) the command line decides alone, as before
  const sockets = new Map<string, Set<string> | null>();
  const vouched = (r: PendingRequest): boolean => gatewayVouches(db, r, sockets) !== false;
  const ourGateway = usable.filter(isOurs);
  const alive = ourGateway.filter(vouched);
  const notVouched = ourGateway.filter((r) => !vouched(r));
  const notPortcullis = usable.filter((r) => !isOurs(r));
  const lists = `${quotedCommand("approvals", stateDir)} lists`;
  const oldest = alive[0];
  if (!oldest) return { pick: null, notPortcullis, notVouched };
  const waitedOn = alive.findIndex((r) => r.callWaiting === true);
  const at = Math.max(waitedOn, 0);
  const newer = alive.length - 1 - at;
  const besides =
    newer === 0
      ? ""
      : `; ${newer} newer ${newer === 1 ? "request is" : "requests are"} pending beside it (${lists} ${newer === 1 ? "it" : "them"})`;
  if (waitedOn === 0)
    return {
      pick: { req: oldest, why: `the oldest pending request, and a call waits on it now${besides}` },
      notPortcullis,
      notVouched,
    };
  if (waitedOn > 0) {
    const n = waitedOn;
    return {
      pick: {
        req: alive[waitedOn]!,
        why: `the oldest pending request a call waits on now; ${n} older ${n === 1 ? "request" : "requests"} no call is known to wait on ${n === 1 ? "is" : "are"} left pending (${lists} ${n === 1 ? "it" : "them"})${besides}`,
      },
      notPortcullis,
      notVouched,
    };
  }
  const unknown = alive.some((r) => r.callWaiting === null);
  return {
    pick: {
      req: oldest,
      why: `the oldest pending request: no call ${unknown ? "is known to wait" : "waits"} on any of them now${besides}`,
    },
    notPortcullis,
    notVouched,
  };
}

/**
 * The line `--next` gives of the requests it passed by because their gateway does not vouch for
 * them (vouch.ts); null when there are none. Names a few, counts the rest.
 */
export function notVouchedLine(passed: readonly PendingRequest[], stateDir?: string): string | null {
  if (passed.length === 0) return null;
  const n = passed.length;
  const named = passed.slice(0, PASSED_BY_NAMED).map((r) => r.request);
  const more = n > named.length ? ` and ${n - named.length} more` : "";
  return (
    `passed by ${n} pending ${n === 1 ? "request" : "requests"} (${named.join(", ")}${more}) that ${n === 1 ? "its gateway does" : "their gateways do"} not vouch for: ` +
    "the gateway holds no mark of such a request with its review, so the row was written by another process (or rewritten since); " +
    `read one with ${quotedCommand("approvals", stateDir)} and decide it by its ID only if a gateway printed that ID for you`
  );
}

/** How many request IDs the passed-by line names; the rest are counted. */
const PASSED_BY_NAMED = 3;

/**
 * The line `--next` gives of the requests it passed by because their gateway is not a portcullis
 * gateway by its command line; null when there are none. Names a few, counts the rest (any
 * process of the user can write thousands of rows).
 */
export function passedByLine(passed: readonly PendingRequest[], stateDir?: string): string | null {
  if (passed.length === 0) return null;
  const n = passed.length;
  const named = passed.slice(0, PASSED_BY_NAMED).map((r) => r.request);
  const more = n > named.length ? ` and ${n - named.length} more` : "";
  return (
    `passed by ${n} pending ${n === 1 ? "request" : "requests"} (${named.join(", ")}${more}) whose gateway is not, ` +
    "by its command line as read here, a portcullis gateway: the rows may have been written by another process " +
    "(or the gateway runs in another PID namespace, where its command line cannot be read); read one with " +
    `${quotedCommand("approvals", stateDir)} and decide it by its ID if it is yours`
  );
}

/**
 * Watches the store until Ctrl-C (or SIGTERM), then exits 0. Text: the list is redrawn on each
 * change. JSON: one line per change, `{"change":"pending","request":{…}}` when a request appears
 * (the ones already pending first), `{"change":"call","request":ID,"callWaiting":…}` when a call
 * starts or stops waiting on one already told (callWaitChange), and
 * `{"change":"closed","request":ID,"state":…}` when one is decided, expires or is withdrawn. Ends (thrown: exit 2, the sentence naming the file) once one
 * of the store's files was deleted or replaced: what it would list is a store nobody writes any
 * more, and its sweep would close requests into the orphaned log.
 */
export async function watchRequests(
  db: Store,
  stateDir: string,
  json: boolean,
  verbose: boolean,
  /** closes what is overdue or abandoned (src/approval/abandoned.ts) before each read */
  sweep: (again?: Unclosed) => Unclosed | null = () => null,
): Promise<number> {
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const onSignal = () => stop();
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  // what --json told of the requests still pending; the text list keeps a digest of its last
  // drawing's rows alone (watchedRows.ts: bounded, whatever a flood of rows writes)
  const followed = new FollowedRequests(stateDir);
  let lastDraw: string | null = null;
  // the stamp of the last read (pendingStamp.ts): the rows are read again only once it differs
  let lastStamp: string | null = null;
  // what the last sweep could not close, while it stands: said again after a terminal's redraw;
  // and when another process held the lock, or the disk was full, the sweep is tried again at
  // each tick, since a lock let go or space freed writes nothing and leaves the stamp as it was
  // (the requests stayed listed as pending until something else changed). Any other failure is
  // tried again at the next change, as before.
  let unclosed: Unclosed | null = null;
  // the "pending" lines of the first read, for the line saying the watch began (sayWatching)
  let toldPending = 0;
  try {
    for (;;) {
      // one stat of each file per read: the list and the sweep are of the store the others use
      StoreFiles.of(db).assertKept();
      const changed = pendingStamp(db) !== lastStamp;
      if (changed || unclosed?.retry) {
        const again: Unclosed | undefined = unclosed ?? undefined;
        unclosed = changed ? sweep() : withoutWaiting(db, (): Unclosed | null => sweep(again));
        // taken after the sweep (its own writes counted), before the read: whatever is committed
        // while reading makes the next stamp differ
        const stamp = pendingStamp(db);
        if (changed || stamp !== lastStamp) {
          const first = lastStamp === null;
          lastStamp = stamp;
          readAndShow();
          if (first && json) sayWatching();
        }
      }
      const wake = await Promise.race([
        stopped.then(() => "stop" as const),
        new Promise<"tick">((r) => setTimeout(() => r("tick"), WATCH_POLL_MS)),
      ]);
      if (wake === "stop") return EXIT_OK;
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }

  /**
   * What changed printed (--json) or the list redrawn. The pending rows' short columns are read
   * (watchedRows.ts), and whole only the rows not told yet and the ones that closed (--json), or
   * the page drawn when it changed (text): one snapshot of the store (a read transaction).
   */
  function readAndShow(): void {
    db.transaction(json ? readJson : readText)();
  }

  /**
   * Said once, on stderr, after the first read's lines: the text watch's list says at once that it
   * began ("no approval request is pending"), and --json printed nothing while nothing was
   * pending, so a script could not tell a watch that had begun from one still opening the store.
   * Not a line of stdout: that stream is one line per change, and its readers take the first line
   * for the first request (README.md, where the lines are listed, says so).
   */
  function sayWatching(): void {
    const n = toldPending;
    process.stderr.write(
      `portcullis approvals --watch: watching; ${n === 0 ? "no approval request is pending" : `${n} pending approval request(s) told above`} (a line per change follows; Ctrl-C to exit)\n`,
    );
  }

  function readJson(): void {
    followed.begin();
    const changed: { k: PendingKey; how: "new" | "call" }[] = [];
    let pending = 0;
    forEachPendingKey(db, (k) => {
      pending += 1;
      const how = followed.see(k);
      if (how) changed.push({ k, how });
    });
    let whole = 0;
    // each gateway's sockets read once for this read (vouch.ts)
    const sockets = new Map<string, Set<string> | null>();
    for (const { k, how } of changed) {
      if (how === "call") {
        print(callWaitChange(k));
        followed.tell(k);
        continue;
      }
      // read whole once: what it is told as (its gateway vouching for it or not) is not asked again
      const r = listedPending(db, k.request);
      whole += 1;
      if (!r) continue;
      // as the list's --json says it (approvals.ts listRequests): whether its gateway vouches for it
      print({
        change: "pending",
        request: {
          ...(requestJson(r) as Record<string, unknown>),
          gatewayVouches: r.waiting ? gatewayVouches(db, r, sockets) : null,
        },
      });
      followed.tell(r);
      toldPending += 1;
    }
    for (const id of followed.closedSince()) {
      const closed = getRequest(db, id);
      whole += 1;
      print({
        change: "closed",
        request: id,
        state: closed?.state ?? "gone",
        decidedAt: closed?.decidedAt ?? null,
        decidedBy: closed?.decidedBy ?? null,
        decisionFor: closed?.decisionFor ?? null,
      });
    }
    sayRowsRead(whole, pending);
  }

  function readText(): void {
    // Redrawn only on change: the "expires in" of a request alone changes every second. What is
    // compared is a digest of every pending row's id, whether a gateway waits on it and what it
    // says of its calls, in order: nothing of the rows is kept between reads.
    const key = createHash("sha256");
    let pending = 0;
    forEachPendingKey(db, (k) => {
      pending += 1;
      key.update(`${JSON.stringify([String(k.request), k.waiting, callWaitKey(k)])}\n`);
    });
    const drawn = key.digest("base64url");
    if (drawn === lastDraw) {
      sayRowsRead(0, pending);
      return;
    }
    lastDraw = drawn;
    // the listing's page (approvals without --all): the 20 newest, the newest last
    const page = pendingPage(db, 0, LISTED_REQUESTS);
    const frame = drawList(db, page.rows.reverse(), page.total, verbose, stateDir);
    process.stdout.write(`${process.stdout.isTTY ? "\u001b[2J\u001b[H" : ""}${frame}\n`);
    // the screen cleared for the frame took the could-not-close line said before it with it
    if (process.stdout.isTTY && unclosed !== null) process.stderr.write(`${unclosed.line}\n`);
    sayRowsRead(page.rows.length, pending);
  }
}

/**
 * With PORTCULLIS_DEBUG=1, how many rows a read of the watch read whole (their review parsed,
 * their gateway judged), of how many pending: what a change costs, for a test to count.
 */
function sayRowsRead(whole: number, pending: number): void {
  if (process.env.PORTCULLIS_DEBUG === "1")
    process.stderr.write(
      `portcullis approvals --watch: read ${whole} ${whole === 1 ? "row" : "rows"} whole; ${pending} pending\n`,
    );
}

/**
 * `sweep` tried again while nothing changed, the lock not waited for (busy timeout 0, put back
 * after): a lock still held fails it at once, and the watch stays at its ticks and its Ctrl-C
 * rather than in a wait of the busy timeout (10 s by default) at every one of them.
 */
export function withoutWaiting<T>(db: Store, sweep: () => T): T {
  const timeout = Number(db.pragma("busy_timeout", { simple: true }));
  db.pragma("busy_timeout = 0");
  try {
    return sweep();
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
}

/** The `--json` line of a call starting or stopping to wait on a request already listed. */
function callWaitChange(r: PendingKey) {
  return {
    change: "call",
    request: r.request,
    callWaiting: r.callWaiting,
    callWaitingSince: r.callWaitingSince,
    callLeft: r.callLeft,
  };
}

function print(line: unknown): void {
  process.stdout.write(`${printableJson(line, 0)}\n`);
}

/**
 * The text list's length (`approvals` without --all, `approvals --watch`): any process of the user
 * can write thousands of rows into the store, and a list of all of them scrolled the human's
 * request out of the terminal.
 */
export const LISTED_REQUESTS = 20;

function drawList(
  db: Store,
  now: PendingRequest[],
  total: number,
  verbose: boolean,
  stateDir: string,
): string {
  const stamp = new Date().toISOString().slice(11, 19);
  const which =
    total > now.length
      ? `; the ${now.length} newest are shown, the newest last (${quotedCommand("approvals --all", stateDir)} lists every one)`
      : ", the newest last";
  const head = `portcullis: ${total === 0 ? "no approval request is pending" : `${total} pending approval request(s)${which}`} (${stamp} UTC; Ctrl-C to exit)`;
  if (now.length === 0) return head;
  const out = [head, ""];
  const sockets = new Map<string, Set<string> | null>();
  for (const r of now) {
    // a review rewritten in the store into something that is no review: one line (unreadableReview.ts)
    out.push(drawnOrUnreadable(r, () => (verbose ? renderReview(r) : renderReviewCard(r))).text);
    if (r.waiting && gatewayVouches(db, r, sockets) === false) out.push(`  ${NOT_VOUCHED_NOTE}`);
    out.push("");
  }
  const next = now.find((r) => r.waiting && unreadableReview(r) === null);
  if (next) {
    const flag = stateDirFlagFor(stateDir);
    // (--next takes the oldest a call waits on, else the oldest: nextDecidable)
    out.push(
      `decide the next: portcullis approve --next${flag}   (or portcullis deny --next --reason TEXT${flag})`,
    );
  }
  return out.join("\n");
}

export type Choice = { choice: "session" | "call" | "deny"; reason?: string } | null;

/**
 * Asks on the terminal (never on stdin, which the agent may feed) what to do with `req`:
 * approve for the session (not offered for a per-call tool), for this call, deny (with an
 * optional reason), or leave it pending.
 */
export async function askDecision(req: PendingRequest): Promise<Choice> {
  const perCall = req.mode === "per-call";
  const options = perCall
    ? "[c] approve this call  [d] deny  [q] leave it pending"
    : "[s] approve for this session  [c] this call only  [d] deny  [q] leave it pending";
  for (;;) {
    const answer = (await readTerminalLine(`${options}: `)).trim().toLowerCase();
    if ((answer === "s" || answer === "session") && !perCall) return { choice: "session" };
    if (answer === "c" || answer === "call") return { choice: "call" };
    if (answer === "q" || answer === "") return null;
    if (answer === "d" || answer === "deny") {
      const reason = (await readTerminalLine("reason (optional, shown to the agent): ")).trim();
      return reason ? { choice: "deny", reason } : { choice: "deny" };
    }
    // asked only by `approve --next` (decideNext), named as its other lines are
    process.stderr.write(
      `portcullis approve --next: ${JSON.stringify(safeText(answer))} is not one of the choices\n`,
    );
  }
}

function openTerminal(flags: "r" | "w"): number {
  try {
    return openSync("/dev/tty", flags);
  } catch {
    throw new UsageError(
      "approve --next: there is no terminal to ask on; give --for session|call, or use deny --next.",
    );
  }
}

/**
 * Whether this process has a controlling terminal to show a decision on and read an answer from
 * (the one `askDecision` and the passphrase prompt use), as opposed to a script's, a CI job's or
 * an agent's subprocess, where stdin may be anything.
 */
export function hasTerminal(): boolean {
  try {
    closeSync(openSync("/dev/tty", "r"));
    return true;
  } catch {
    return false;
  }
}

/** One line typed on the controlling terminal (echo on). */
function readTerminalLine(prompt: string): Promise<string> {
  const out = openTerminal("w");
  const input = new ReadStream(openTerminal("r"));
  writeSync(out, prompt);
  return new Promise<string>((resolve) => {
    let text = "";
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8");
      const nl = text.indexOf("\n");
      if (nl === -1) return;
      input.off("data", onData);
      input.destroy();
      closeSync(out);
      resolve(text.slice(0, nl).replace(/\r$/, ""));
    };
    input.on("data", onData);
  });
}
