import { closeSync, openSync, writeSync } from "node:fs";
import { userInfo } from "node:os";
import { abandonedRequests, expireAbandoned } from "../approval/abandoned.js";
import { reviewDigest } from "../approval/decision.js";
import { activeGrants, GrantError, getGrant, publicGrant, revokeGrant } from "../approval/grants.js";
import { argumentsPartlyHidden, partlyHiddenReason } from "../approval/hiddenArguments.js";
import {
  APPROVALS_HONOURED_SINCE,
  approvalNotHonouredBy,
  gatewaySchemaOfRun,
} from "../approval/olderGateway.js";
import { perCallOnlyReason } from "../approval/perCallOnly.js";
import { ApproverKeyMismatchError, pinnedSigner } from "../approval/pin.js";
import { argumentsNotShownWhole, renderGrant, renderReview, renderReviewCard } from "../approval/render.js";
import {
  type ApprovalRequest,
  type Decision,
  DecisionError,
  decideRequest,
  type PendingRequest,
  pendingPage,
  pendingRequest,
  pendingRequests,
} from "../approval/requests.js";
import { getRun } from "../approval/runs.js";
import { epochMovedOn } from "../approval/serverEpoch.js";
import { ShownDecisions } from "../approval/shownDecisions.js";
import { gatewayVouches, NOT_VOUCHED_NOTE } from "../approval/vouch.js";
import { displayName, safeText } from "../catalog/text.js";
import { notPortcullisPhrase, runsPortcullisCommand } from "../identity/proc.js";
import type { DecisionSigner } from "../keyring/approver.js";
import {
  KeyringError,
  KeyringMissingError,
  KeyringTamperedError,
  WrongPassphraseError,
} from "../keyring/keyringErrors.js";
import {
  openExistingStore,
  openStoreToRead,
  readFromCopy,
  readWithoutWriting,
  type Store,
  StoreError,
  storeFailure,
  writeRefused,
} from "../store/db.js";
import { olderThan, schemaPhrase } from "../store/schemaVersion.js";
import { existingStateDir, hintStateDir, quotedCommand, stateDirFlagFor } from "../store/stateDir.js";
import { storeAdvice } from "../store/storeAdvice.js";
import { closeStoreUnlessLost } from "../store/storeWatch.js";
import { printableJson } from "../util/printableJson.js";
import {
  askDecision,
  hasTerminal,
  LISTED_REQUESTS,
  nextDecidable,
  notVouchedLine,
  passedByLine,
  type Unclosed,
  watchRequests,
  withoutWaiting,
} from "./approvalsLive.js";
import { oneOf, parse, refuseEmpty } from "./args.js";
import { EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, UsageError } from "./errors.js";
import { failureLine } from "./failureLine.js";
import { keyringAdvice } from "./keyringAdvice.js";
import { PASSPHRASE_FILE_ENV, PASSPHRASE_HELP, PassphraseError, readPassphrase } from "./passphrase.js";
import { readWithoutWritingLine, sayReadWithoutWriting } from "./readWithoutWriting.js";
import { drawnOrUnreadable, refuseUnreadable, requestJson, unreadableReview } from "./unreadableReview.js";
import {
  openWritableAgain,
  triesWritableAgain,
  watchCannotCloseNote,
  writableRetryMs,
} from "./writableAgain.js";

export type ApprovalsCommandName = "approvals" | "approve" | "deny" | "grants" | "revoke";

/**
 * Why nothing that may be the passphrase is taken from the command line, and what to do instead:
 * type it when asked, for the two that ask; revoke and the lists ask for none ("type it when
 * asked" sent the user of those to wait for a question that never comes).
 */
function noArgumentPassphrase(name: ApprovalsCommandName): string {
  const why =
    "the passphrase is never accepted on the command line (other processes, and the agent, could read it there)";
  if (name === "approve" || name === "deny") return `${why}; type it when asked, on the terminal`;
  return `${why}; ${name} asks for none (${name === "revoke" ? "revoking only takes authority away" : "it only reads"})`;
}

export const APPROVALS_HELP: Record<ApprovalsCommandName, string> = {
  approvals: `usage: portcullis approvals [--watch] [--json] [--verbose] [--all] [--state-dir DIR]

Pending approval requests, the newest last, each with what to review before deciding
on one screen: who asks (the agent host and the process that launched the gateway),
the tool and server, what changed since the last approval (the execution record and
the catalog diff with its classification), the credential scopes, and the arguments
with schema defaults made visible (secrets redacted), and whether a call waits
on it right now (as its gateway recorded it: a request whose call the client
cancelled stays pending for a retry, and nothing waits on it meanwhile).
  --watch     a live list: redrawn whenever a request appears or is decided, or
              a call starts or stops waiting on one; Ctrl-C exits. With --json:
              one JSON line per change.
  --verbose   the full review, with the whole process chain (also --chain); --json
              always holds the whole request, so it changes nothing there
  --all       every pending request; without it (and with --watch), of more than
              ${LISTED_REQUESTS} the newest ${LISTED_REQUESTS}, saying how many are pending (one
              said to be made at a time still to come counts as the oldest); --json
              always lists every one
  --json      one JSON object on standard output, {"requests": [...]}, every pending request
              whole (its review included), oldest first; errors stay one sentence on
              standard error, with the same exit codes
Decide with 'portcullis approve --next', 'portcullis approve ID' or 'portcullis deny ID'.`,
  approve: `usage: portcullis approve ID|--next [--for session|call] [--json] [--verbose] [--state-dir DIR]

Shows the request's review, asks for the passphrase, then approves.
  --next          the oldest pending request a call waits on now (when no call
                  waits on any, the oldest pending request); its first line says
                  which it picked and why, and how many newer ones are pending.
                  Only a request whose gateway is, by its command line, a
                  portcullis gateway is picked: the others are passed by in a
                  line naming them (approve ID decides one once you have read it).
                  Without --for, asks on the terminal whether to approve (for the
                  session or this call) or deny it
  --for session   the grant covers this agent run's calls of this tool for the
                  current execution epoch (default, on a terminal, for tools in
                  session mode)
  --for call      this one call only; never remembered (the only choice for
                  tools in per-call mode)
Without a terminal (a script, a CI job), --for is required: approve ID picks no
default there, as approve --next does not.
  --verbose       the full review, with the whole process chain (also --chain) and
                  every argument whole. A one-call approval is of exactly the call's
                  arguments: when the card cut a value or left an argument out, it is
                  refused, and approve --for call --verbose shows them all
  --json          the result as one JSON object on standard output (request, decision,
                  grant with its id and mode, execution epoch, whether it covers nothing
                  because the server's epoch moved on; with --next, why it was picked);
                  the review and the prompts go to standard error and the terminal.
                  Errors stay one sentence on standard error, with the same exit codes

An approval is bound to the execution epoch its request named: when the server
was replaced since, approve says so, and the approval covers nothing. A request of
a gateway an older portcullis started (still running since before an upgrade) that
could not verify this version's approval is refused (exit 2), saying to restart it.

${PASSPHRASE_HELP}
The passphrase is never accepted as an argument.`,
  deny: `usage: portcullis deny ID|--next [--reason TEXT] [--json] [--verbose] [--state-dir DIR]

Shows the request's review, asks for the passphrase, then denies it. The agent is
told a human said no, with the reason when one is given (quote a reason of several words).
  --next          the oldest pending request a call waits on now (else the oldest),
                  as approve --next picks it (passing by a request whose gateway
                  is not a portcullis gateway), saying which and why
  --reason TEXT   the reason the agent is told
  --json          the result as one JSON object on standard output (request, decision,
                  reason, execution epoch; with --next, why it was picked); the review
                  goes to standard error and the terminal; errors stay on standard error
  --verbose       the full review, with the whole process chain (also --chain)

${PASSPHRASE_HELP}`,
  grants: `usage: portcullis grants [--json] [--state-dir DIR]

Active grants: what a human approved, for which agent run, server label,
execution epoch, tool fingerprints and credential scopes.
  --json   the same as one JSON object on standard output, {"grants": [...]}, each with
           whether its run is alive and whether gateways honour it; errors stay one sentence on
           standard error, with the same exit codes`,
  revoke: `usage: portcullis revoke GRANT [--json] [--state-dir DIR]

Revokes a grant. It stops covering calls from the next call on; a call already
forwarded is not recalled. Revoking only takes authority away, so it does not
ask for the passphrase.
  --json   the result as one JSON object on standard output (the grant revoked: id,
           mode, agent run, server label, execution epoch, scopes); errors stay on
           standard error`,
};

const VERBOSE = { verbose: { type: "boolean" }, chain: { type: "boolean" } } as const;

const OPTIONS = {
  approvals: { json: { type: "boolean" }, watch: { type: "boolean" }, all: { type: "boolean" }, ...VERBOSE },
  approve: { for: { type: "string" }, next: { type: "boolean" }, json: { type: "boolean" }, ...VERBOSE },
  deny: { reason: { type: "string" }, next: { type: "boolean" }, json: { type: "boolean" }, ...VERBOSE },
  grants: { json: { type: "boolean" } },
  revoke: { json: { type: "boolean" } },
} as const;

const COMMON = { "state-dir": { type: "string" }, help: { type: "boolean", short: "h" } } as const;

/** `approvals`, `approve`, `deny`, `grants`, `revoke`: returns the exit code (0, 1 or 2). */
export async function approvalsCommand(name: ApprovalsCommandName, args: string[]): Promise<number> {
  try {
    return await dispatch(name, args);
  } catch (e) {
    if (e instanceof UsageError || e instanceof PassphraseError) return fail(EXIT_USAGE, e.message);
    // named by the command, as vault's, unlock's and audit's are (its sentence names none)
    if (e instanceof KeyringMissingError) return fail(EXIT_USAGE, `${name}: ${e.message}`);
    // A wrong passphrase, a keyring whose parts were changed, an approver key that is not the
    // pinned one: a check failed (README).
    if (
      e instanceof WrongPassphraseError ||
      e instanceof KeyringTamperedError ||
      e instanceof ApproverKeyMismatchError
    )
      return fail(EXIT_CHECK_FAILED, `${name}: ${e.message}; nothing was changed.`);
    // A keyring that cannot be used is the environment's problem, as for every command (README).
    if (e instanceof KeyringError)
      return fail(EXIT_USAGE, `${name}: ${e.message}; nothing was changed.${keyringAdvice(e)}`);
    if (e instanceof DecisionError)
      return fail(e.kind === "not-pending" ? EXIT_CHECK_FAILED : EXIT_USAGE, `${name}: ${e.message}.`);
    if (e instanceof GrantError)
      return fail(e.kind === "not-found" ? EXIT_USAGE : EXIT_CHECK_FAILED, `${name}: ${e.message}.`);
    throw e;
  }
}

function fail(code: number, message: string): number {
  // written here, not by the command line's reportFailure: escaped as it escapes (a keyring's
  // path in the state directory, which may hold a control character)
  process.stderr.write(`${safeText(failureLine(message))}\n`);
  return code;
}

async function dispatch(name: ApprovalsCommandName, args: string[]): Promise<number> {
  if (!Object.hasOwn(APPROVALS_HELP, name)) throw new UsageError(`unknown command "${name}"`);
  // Refused before parsing, and never echoed: what follows such a flag may be the passphrase.
  if (args.some((a) => /^--?(passphrase|password|pin)(=|$)/i.test(a))) {
    throw new UsageError(`${name}: ${noArgumentPassphrase(name)}.`);
  }
  const { values, positionals } = parse(name, args, { ...OPTIONS[name], ...COMMON });
  const v = values as {
    json?: boolean;
    watch?: boolean;
    all?: boolean;
    next?: boolean;
    verbose?: boolean;
    chain?: boolean;
    for?: string;
    reason?: string;
    "state-dir"?: string;
    help?: boolean;
  };
  if (v.help) {
    process.stdout.write(`${APPROVALS_HELP[name]}\n`);
    return EXIT_OK;
  }
  const wants = name === "approvals" || name === "grants" || v.next ? 0 : 1;
  if (positionals.length < wants) {
    throw new UsageError(
      `${name}: give the ${name === "revoke" ? "GRANT" : "request ID"}; see 'portcullis ${name} --help'.`,
    );
  }
  // an empty reason (`--reason "$WHY"` with WHY unset) is refused, not recorded and told to the
  // agent as a reason that says nothing
  if (name === "deny")
    refuseEmpty("deny", "reason", v.reason, "the reason the agent is told", "to give none");
  if (name === "deny" && v.reason !== undefined && positionals.length > wants) {
    throw new UsageError(
      `deny: --reason takes one argument; quote a reason of several words (--reason "not this branch").`,
    );
  }
  if (positionals.length > wants) {
    // Never echo the extra word: it may be a passphrase typed where it does not belong.
    throw new UsageError(
      wants === 0
        ? `${name}${v.next ? " --next" : ""}: takes no arguments${v.next ? " (it picks the pending request itself)" : ""}${name === "approvals" && !v.next ? APPROVALS_LIST_ALL : ""}.`
        : `${name}: unexpected argument after the ${name === "revoke" ? "GRANT" : "request ID"}; ${noArgumentPassphrase(name)}.`,
    );
  }
  const id =
    wants === 1 ? givenId(name as "approve" | "deny" | "revoke", positionals[0]!, v["state-dir"]) : "";
  const verbose = !!(v.verbose || v.chain);
  const forWhat = name === "approve" ? oneOf(name, "for", v.for, ["session", "call"] as const) : undefined;
  const stateDir = existingStateDir(v["state-dir"]);
  // The lists only read (but for closing abandoned requests, which can wait): a store on a full
  // disk, or under a file size limit, is read all the same, saying so. A decision is a write.
  const lists = name === "approvals" || name === "grants";
  const db = lists ? openStoreToRead(stateDir) : openExistingStore(stateDir);
  // a --watch over a store opened only to read: the connection it closes through once the store
  // can be written again (writableAgain.ts)
  let writer: Store | null = null;
  try {
    // A live list drawn from a copy in memory would stay as the store was when it began (a request
    // a gateway asks for afterwards never shown): refused, saying why, rather than shown as live.
    if (name === "approvals" && v.watch) refuseWatchingCopy(db);
    let notClosedSaid = false;
    // the last "could not close" line said: a --watch sweeps at every change, and repeats it only
    // when it says something new (another cause, other requests left)
    let couldNotCloseSaid = "";
    // the line said when a write of the closing was refused (a full disk, a file size limit, a
    // read-only file): said once while it holds; a --watch tries again at each tick
    let writeRefusedSaid = "";
    // when such a --watch tries to open the store to write next
    let nextWritableTry = 0;
    // What a dead gateway left pending, or what is overdue, is closed before anything is listed or
    // decided. Returns the could-not-close line while it stands (a --watch says it again after
    // clearing a terminal, and tries again at its next tick when another process held the lock or
    // the write was refused), else null. `again`: what the try before this one (a --watch's, at a
    // tick where nothing changed) could not close.
    const sweep = (again?: Unclosed): Unclosed | null => {
      // a --watch over a store it opened only to read closes through a second connection once
      // the store can be written again (writableAgain.ts)
      const refused = writer ? undefined : readWithoutWriting(db);
      const through = writer ?? db;
      if (!refused) {
        try {
          // a retry of a --watch waits for no lock (watchRequests: withoutWaiting); the second
          // connection is not the one it set that on
          const closed =
            again && writer ? withoutWaiting(writer, () => expire(writer as Store)) : expire(through);
          // what a --watch said it could not close is closed now: said, as its warning was
          if ((couldNotCloseSaid !== "" || writeRefusedSaid !== "" || notClosedSaid) && closed.length > 0)
            process.stderr.write(`${closedAfterAllLine(name, closed)}\n`);
          couldNotCloseSaid = "";
          writeRefusedSaid = "";
          notClosedSaid = false;
          return null;
        } catch (e) {
          const cause = storeFailure(e)?.reason;
          const lockHeld = cause === "locked" || cause === "busy";
          // a full disk tried again without waiting for the lock, which another writer held for a
          // moment: the disk is what stands in the way still, as said; nothing new to say
          if (again && writeRefusedSaid !== "" && lockHeld) return again;
          const writeFailed = writeRefused(e);
          // Best effort: the list is still right about what is pending; the next reader closes them.
          if (!writeFailed) {
            const line = couldNotCloseLine(name, e, db);
            if (line !== couldNotCloseSaid) process.stderr.write(`${line}\n`);
            couldNotCloseSaid = line;
            writeRefusedSaid = "";
            return { line, retry: lockHeld };
          }
          // the file system refused the write, which may take it once there is room again: said
          // once while it says the same (a --watch tries again at each tick), with what is left
          // pending
          const line = readWithoutWritingLine(name, writeFailed, notClosed(db));
          if (line !== writeRefusedSaid) process.stderr.write(`${line}\n`);
          writeRefusedSaid = line;
          couldNotCloseSaid = "";
          return { line, retry: true };
        }
      }
      // a store opened only to read (a read-only file, a full disk, a file size limit as it was
      // opened): said once (a --watch sweeps at every change), with what is left pending. This
      // connection cannot write: a list is done; a --watch says what it does about it, and tries
      // every few seconds to open the store to write (not under a file size limit, its own)
      const watching = name === "approvals" && !!v.watch;
      const line = readWithoutWritingLine(
        name,
        refused,
        [notClosed(db), ...(watching ? [watchCannotCloseNote(refused, stateDir)] : [])].join("; "),
      );
      if (!notClosedSaid) process.stderr.write(`${line}\n`);
      notClosedSaid = true;
      if (!watching || !triesWritableAgain(refused)) return null;
      const now = Date.now();
      if (now < nextWritableTry) return { line, retry: true };
      nextWritableTry = now + writableRetryMs();
      writer = openWritableAgain(stateDir);
      // writable again: closed through it now, as a store writable from the start is
      return writer ? sweep(again) : { line, retry: true };
    };
    const expire = (store: Store): string[] =>
      expireAbandoned(store, stateDir, `'portcullis ${name}' (pid ${process.pid})`);
    if (name === "grants") sayReadWithoutWriting(db, "grants");
    // (a --watch sweeps at its first tick, before its first read: swept here too, it waited out
    // the busy timeout twice under another process's lock before it showed anything)
    if (name !== "grants" && name !== "revoke" && !(name === "approvals" && v.watch)) sweep();
    switch (name) {
      case "approvals":
        return v.watch
          ? await watchRequests(db, stateDir, !!v.json, verbose, sweep)
          : listRequests(db, !!v.json, verbose, stateDir, !!v.all);
      case "grants":
        return listGrants(db, stateDir, !!v.json);
      case "approve":
        if (v.next) return await decideNext(db, stateDir, forWhat, undefined, verbose, !!v.json);
        return await approve(db, stateDir, id, forWhat, verbose, !!v.json);
      case "deny":
        if (v.next) return await decideNext(db, stateDir, "deny", v.reason, verbose, !!v.json);
        return await deny(db, stateDir, id, v.reason, verbose, !!v.json);
      case "revoke":
        return await revoke(db, stateDir, id, !!v.json);
    }
  } catch (e) {
    throw whereToLook(e, stateDir);
  } finally {
    // A store file deleted or replaced while the human read the review or typed the passphrase
    // (the decision was then refused): the store is left open, not checkpointed from an orphaned log.
    closeStoreUnlessLost(db);
    if (writer) closeStoreUnlessLost(writer);
  }
  return EXIT_USAGE;
}

/**
 * An id that names nothing, with where to see the ones that exist (README, "Commands"): the
 * sentence said only "there is no grant ID", and a human who mistyped it had to know which
 * command lists them. The id itself is of the right shape (givenId checked it), so it is repeated.
 */
function whereToLook(e: unknown, stateDir: string): unknown {
  if (e instanceof DecisionError && e.kind === "not-found")
    return new DecisionError(
      `${e.message}; ${quotedCommand("approvals", stateDir)} lists the pending ones`,
      e.kind,
    );
  if (e instanceof GrantError && e.kind === "not-found")
    return new GrantError(`${e.message}; ${quotedCommand("grants", stateDir)} lists the active ones`, e.kind);
  return e;
}

/**
 * Refuses `approvals --watch` over a store read from a copy in memory (readFromCopy): exit 2 with
 * the store's sentence, what a watch would miss, and what does work.
 */
function refuseWatchingCopy(db: Store): void {
  const why = readWithoutWriting(db);
  if (!why || !readFromCopy(db)) return;
  throw new StoreError(
    why.path,
    `${why.problem} It could be read only as a copy in memory (SQLite cannot make the index, ${why.path}-shm, it reads the store through while others write it), and a copy does not change: approvals --watch would not show a request asked for or decided after it began, so it does not run. 'portcullis approvals' (without --watch) lists what is pending now. To fix it: ${storeAdvice(why)}.`,
    why.reason,
  );
}

/**
 * Why the abandoned requests were left pending, when closing them failed for another cause than a
 * write the file system refused (said by readWithoutWritingLine): another process holding the
 * store's write lock past the busy timeout (a database browser with an unsaved edit, an sqlite3
 * shell inside BEGIN), say. The store's own sentence (the file and the cause) rather than SQLite's
 * "database is locked", which names neither, with the requests left and the one thing to do; the
 * store's path escaped (a state directory's name may hold a control character).
 */
function couldNotCloseLine(name: string, e: unknown, db: Store): string {
  const failure = storeFailure(e);
  const why = (failure?.message ?? (e as Error | null)?.message ?? String(e)).replace(/\.$/, "");
  const fix = failure ? `. To fix it: ${storeAdvice(failure)}` : "";
  // what was left, when it can still be read: the line is said whatever else failed
  let left = "";
  try {
    left = `; ${notClosed(db)}`;
  } catch {
    // the store cannot be read either: the cause above says why
  }
  return safeText(`portcullis ${name}: could not close abandoned approval requests: ${why}${left}${fix}.`);
}

/**
 * The requests a --watch said it could not close, closed at a later tick (the lock let go): the
 * warning above no longer holds, and a log of stderr says so rather than leaving it standing.
 */
function closedAfterAllLine(name: string, closed: string[]): string {
  const shown = closed.slice(0, 5).join(", ");
  const more = closed.length > 5 ? `, and ${closed.length - 5} more` : "";
  const one = closed.length === 1;
  return `portcullis ${name}: the store could be written again: closed ${closed.length} abandoned approval request${one ? "" : "s"}: ${shown}${more}`;
}

/**
 * What a sweep the store refused left undone: the pending requests that can no longer be decided
 * (read, not closed), listed as pending until a lister can write their closing.
 */
function notClosed(db: Store): string {
  const left = abandonedRequests(db);
  if (left.length === 0) return "no abandoned approval request needed closing";
  const shown = left.slice(0, 5).map((r) => r.id);
  const more = left.length > shown.length ? `, and ${left.length - shown.length} more` : "";
  const one = left.length === 1;
  return `${left.length} approval request${one ? "" : "s"} that can no longer be decided (the gateway that asked is gone, or the time is up) ${one ? "was" : "were"} not closed: ${shown.join(", ")}${more}; ${one ? "it is" : "they are"} listed as pending until a 'portcullis approvals' where the store can be written closes ${one ? "it" : "them"}`;
}

/** Request and grant IDs are ULIDs: 26 of Crockford's base-32 digits, case-insensitive. */
const ID_SHAPE = /^[0-9A-HJKMNP-TV-Z]{26}$/i;

/**
 * The request or grant ID given, as stored (upper case). An empty word (an unset `$ID`) is no
 * ID, not a request named "". A word that is not shaped like an ID is not repeated: `approve`
 * asks for the passphrase, and `portcullis approve hunter2` is how a user who expected to give it
 * here would type it (nor is a 100 KB word written back).
 */
function givenId(name: "approve" | "deny" | "revoke", word: string, stateDirFlag?: string): string {
  const what = name === "revoke" ? "GRANT" : "request ID";
  // the list to look in, in the state directory this command was given (not the default's)
  const listed = () => quotedCommand(name === "revoke" ? "grants" : "approvals", hintStateDir(stateDirFlag));
  if (word === "") throw new UsageError(`${name}: the ${what} given is empty; see ${listed()}.`);
  if (!ID_SHAPE.test(word))
    throw new UsageError(
      `${name}: the ${what} given is not one (26 letters and digits, as ${listed()} shows them; not shown, in case it is a passphrase or a secret typed in the wrong place).`,
    );
  return word.toUpperCase();
}

/**
 * `req` as `approvals` lists it (its gateway alive, whether a call waits on it now), so that the
 * review `approve ID` and `deny ID` show says it too; as it is when it is not listed.
 */
function listed(db: Store, req: ApprovalRequest): ApprovalRequest {
  return pendingRequests(db).find((r) => r.request === req.request) ?? req;
}

/**
 * The review as printed: the one-screen card, or the full review with the process chain. A
 * review printed to decide on (`approve`, `deny`) shows every argument whole when verbose: a
 * one-call approval signs exactly those arguments. The listing (`approvals --verbose`, redrawn
 * live by `--watch`) cuts each value at a few hundred characters.
 */
function review(req: Parameters<typeof renderReview>[0], verbose: boolean, deciding = false): string {
  return verbose ? renderReview(req, { wholeArguments: deciding }) : renderReviewCard(req);
}

function listRequests(db: Store, json: boolean, verbose: boolean, stateDir: string, all: boolean): number {
  // whether each request's gateway vouches for its row (vouch.ts; null where none can: not Linux)
  const sockets = new Map<string, Set<string> | null>();
  const vouches = (r: PendingRequest) => (r.waiting ? gatewayVouches(db, r, sockets) : null);
  if (json) {
    const requests = pendingRequests(db).map((r) => ({
      ...(requestJson(r) as Record<string, unknown>),
      gatewayVouches: vouches(r),
    }));
    process.stdout.write(`${printableJson({ requests })}\n`);
    return EXIT_OK;
  }
  // the console's order (pendingPage), turned over: the newest printed last, next to the prompt
  const { total, rows } = pendingPage(db, 0, all ? Number.MAX_SAFE_INTEGER : LISTED_REQUESTS);
  const pending = rows.reverse();
  if (pending.length === 0) {
    process.stdout.write("no approval request is pending\n");
    return EXIT_OK;
  }
  // with the state directory when it is not the default: the commands paste whole
  const sd = stateDirFlagFor(stateDir);
  if (total > pending.length)
    process.stdout.write(
      `${total} approval requests are pending; the ${pending.length} newest are listed, the newest last (one said to be made at a time still to come counts as the oldest). Any process of yours can write requests into the store: the one a gateway printed for you is decided by its ID, ${quotedCommand("approve ID", stateDir)}. Every one: ${quotedCommand("approvals --all", stateDir)}.\n\n`,
    );
  for (const r of pending) {
    // a review rewritten in the store into something that is no review: one line, and the rest listed
    const shown = drawnOrUnreadable(r, () => review(r, verbose));
    // a gateway an older portcullis started that could not verify an approval: approve would be
    // refused (olderGateway.ts), so it is not offered
    const run = getRun(db, r.agentRun);
    const schema = run ? gatewaySchemaOfRun(db, run) : null;
    const decide =
      run && olderThan(schema, APPROVALS_HONOURED_SINCE)
        ? `\n  decide     only a denial: its gateway (pid ${run.gatewayPid}) was started by an older portcullis (${schemaPhrase(schema)}), which cannot verify this version's approvals; ${restartAdvice(run)}, or deny: portcullis deny ${r.request}${sd}`
        : `\n  decide     portcullis approve ${r.request}${sd}   or   portcullis deny ${r.request}${sd}`;
    const mark = vouches(r) === false ? `\n  ${NOT_VOUCHED_NOTE}` : "";
    process.stdout.write(`${shown.text}${mark}${shown.readable ? decide : ""}\n\n`);
  }
  return EXIT_OK;
}

/**
 * How to restart the gateway of a run an older portcullis started: a run row names any pid its
 * writer chose, and one that is not a gateway is not to be restarted or ended.
 */
function restartAdvice(run: { gatewayPid: number; gatewayPidStart: string | null }): string {
  if (runsPortcullisCommand(run.gatewayPid, "run", run.gatewayPidStart))
    return "restart it to approve its calls";
  return `its ${notPortcullisPhrase(run.gatewayPid, "gateway")}; restart the MCP client whose gateway asked to approve its calls`;
}

function listGrants(db: Store, stateDir: string, json: boolean): number {
  const grants = activeGrants(db);
  // a row no gateway honours (written by other means than approve) is said to be so
  const shown = new ShownDecisions(db, stateDir);
  const refused = new Map(grants.map((g) => [g.grant, shown.grant(g)]));
  if (json) {
    const out = grants.map((g) => {
      const why = refused.get(g.grant) ?? null;
      return {
        ...publicGrant(g),
        serverEpoch: g.serverEpoch,
        catalogRevision: g.catalogRevision,
        approvedBy: g.approvedBy,
        request: g.request,
        runAlive: g.runAlive,
        honoured: why === null,
        ...(why !== null ? { notHonouredBecause: why } : {}),
      };
    });
    process.stdout.write(`${printableJson({ grants: out })}\n`);
    return EXIT_OK;
  }
  if (grants.length === 0) {
    process.stdout.write("no grant is active\n");
    return EXIT_OK;
  }
  for (const g of grants) process.stdout.write(`${renderGrant(g, refused.get(g.grant) ?? null)}\n\n`);
  return EXIT_OK;
}

/**
 * Proof of a human: the passphrase, typed on the terminal, opens the keyring and its approver
 * key, which signs the decision (added and pinned in the audit chain first if the keyring
 * predates signed decisions).
 */
async function verifyHuman(
  db: Store,
  stateDir: string,
  command: "approve" | "deny",
  what: string,
): Promise<{ by: string; signer: DecisionSigner }> {
  const passphrase = await readPassphrase(`Passphrase to ${what}: `);
  // a notice (the approver key pinned, a passphrase change recorded late) names its command, as
  // every other line on stderr does
  const signer = await pinnedSigner(db, stateDir, passphrase, (line) =>
    process.stderr.write(`portcullis ${command}: ${safeText(line)}\n`),
  );
  return { by: `${userName()} via 'portcullis' (pid ${process.pid}, passphrase verified)`, signer };
}

function userName(): string {
  try {
    return userInfo().username;
  } catch {
    return "unknown user"; // no passwd entry
  }
}

function pendingOrFail(db: Store, name: string, id: string) {
  const req = pendingRequest(db, id);
  const run = getRun(db, req.agentRun);
  if (!run?.gatewayAlive) {
    throw new DecisionError(
      `the gateway that asked for ${id} is no longer running; nothing would use the ${name}`,
      "not-pending",
    );
  }
  // before its review is printed (it cannot be) or the passphrase asked
  refuseUnreadable(req);
  // an approval its gateway (an older portcullis's, since before an upgrade) would not honour:
  // before the review and the passphrase too
  const notHonoured = name === "approval" ? approvalNotHonouredBy(db, run, id) : null;
  if (notHonoured) throw new DecisionError(notHonoured, "not-allowed");
  return req;
}

/**
 * `approve --next` / `deny --next`: the oldest request a waiting gateway can still use, reviewed
 * once, then decided as `choice` says, or as the human answers on the terminal.
 */
async function decideNext(
  db: Store,
  stateDir: string,
  choice: "session" | "call" | "deny" | undefined,
  reason: string | undefined,
  verbose: boolean,
  json: boolean,
): Promise<number> {
  const { pick: picked, notPortcullis, notVouched } = nextDecidable(db, stateDir);
  const verb = choice === "deny" ? "deny" : "approve";
  const passedBy = [passedByLine(notPortcullis, stateDir), notVouchedLine(notVouched, stateDir)]
    .filter((l) => l !== null)
    .map((l) => `${verb} --next: ${l}.\n`)
    .join("");
  // named by the command, as its other refusals are ("portcullis approve --next: …")
  if (!picked)
    return fail(
      EXIT_USAGE,
      `${verb} --next: ${nothingToDecide(db, stateDir, notPortcullis.length, notVouched.length)}`,
    );
  const req = picked.req;
  // without a choice and without a terminal to ask on: refused before the review is printed (a
  // script would get a review on stdout for a command that failed)
  if (!choice && !hasTerminal())
    throw new UsageError(
      `approve --next: there is no terminal to ask on; give --for session|call, or use ${quotedCommand("deny --next", stateDir)}.`,
    );
  // --for session of a per-call tool's request: refused as 'approve ID --for session' refuses it,
  // before the review (a script would get a review on stdout for a command that failed)
  if (choice === "session" && req.mode === "per-call")
    throw new UsageError(`approve --next: ${PER_CALL_ONLY(req)}`);
  // an approval its gateway would not honour (olderGateway.ts): before the review, as above
  const run = choice && choice !== "deny" ? getRun(db, req.agentRun) : null;
  const notHonoured = run ? approvalNotHonouredBy(db, run, req.request) : null;
  if (notHonoured) throw new DecisionError(notHonoured, "not-allowed");
  // the choice is asked on the terminal when none was given, and the passphrase too without a file
  // which request, and why that one: the oldest a call waits on is not always the oldest listed
  showHuman(
    `${verb} --next: ${req.request} (${subjectOf(req)}), ${picked.why}.\n${passedBy}${review(req, verbose, true)}\n\n`,
    !choice || typedPassphrase(),
    json,
  );
  const decided = choice ? { choice, reason } : await askDecision(req);
  if (decided === null) {
    if (json) writeResult({ ...about(req), decision: "left-pending", picked: picked.why });
    else process.stdout.write(`left ${req.request} pending\n`);
    return EXIT_OK;
  }
  if (decided.choice === "deny")
    return deny(db, stateDir, req.request, decided.reason, verbose, json, { why: picked.why, shown: req });
  return approve(db, stateDir, req.request, decided.choice, verbose, json, req, picked.why);
}

/**
 * Why `--next` found nothing to decide: nothing pending, or only requests whose stored review
 * cannot be read (nextDecidable passes them by; 'no approval request is pending' would contradict
 * the list that shows them).
 */
function nothingToDecide(db: Store, stateDir: string, notPortcullis: number, notVouched: number): string {
  const n = pendingRequests(db).filter((r) => r.waiting && unreadableReview(r) !== null).length;
  if (notVouched > 0 && notPortcullis === 0) {
    const m = notVouched;
    return `no approval request can be decided with --next: ${m === 1 ? "the gateway of the one pending request does" : `the gateways of the ${m} pending requests do`} not vouch for ${m === 1 ? "it" : "them"} (a gateway holds a mark of each request it makes, with its review; ${m === 1 ? "this row was" : "these rows were"} written by another process, or rewritten since); read ${m === 1 ? "it" : "them"} with ${quotedCommand("approvals", stateDir)} and decide one by its ID only if a gateway printed that ID for you.`;
  }
  // both kinds passed by: each counted, so the total matches the lines above it and the list
  if (notVouched > 0 && notPortcullis > 0) {
    const m = notVouched + notPortcullis;
    return `no approval request can be decided with --next: of the ${m} pending requests, the ${notPortcullis === 1 ? "gateway of 1 is" : `gateways of ${notPortcullis} are`} not, by ${notPortcullis === 1 ? "its command line as read here, a portcullis gateway" : "their command lines as read here, portcullis gateways"}, and the ${notVouched === 1 ? "gateway of 1 does" : `gateways of ${notVouched} do`} not vouch for ${notVouched === 1 ? "it" : "them"} (a gateway holds a mark of each request it makes, with its review): the rows may have been written by another process; read them with ${quotedCommand("approvals", stateDir)} and decide one by its ID only if a gateway printed that ID for you.`;
  }
  if (notPortcullis > 0) {
    const m = notPortcullis;
    const whose =
      m === 1 ? "the gateway of the one pending request is" : `the gateways of the ${m} pending requests are`;
    return `no approval request can be decided with --next: ${whose} not, by ${m === 1 ? "its command line as read here, a portcullis gateway" : "their command lines as read here, portcullis gateways"} (the rows may have been written by another process, or the gateway runs in another PID namespace, where its command line cannot be read); read ${m === 1 ? "it" : "them"} with ${quotedCommand("approvals", stateDir)} and decide one by its ID if it is yours.`;
  }
  if (n === 0) return "no approval request is pending.";
  return `no approval request can be decided: the stored review of the ${n === 1 ? "one" : n} pending cannot be read (${quotedCommand("approvals", stateDir)} lists ${n === 1 ? "it" : "them"}).`;
}

/** What `approve ID` says of a request its gateway does not vouch for. */
const NOT_VOUCHED_WARNING = (id: string) =>
  `warning: the gateway of ${id} does not vouch for it (it holds no mark of this request with this review): the row may have been written by another process; approve it only if a gateway printed this ID for you`;

/** The refusal of --for session for a per-call tool's request, as every decision path says it. */
const PER_CALL_ONLY = (req: ApprovalRequest) =>
  `${perCallOnlyReason(req)} (--for call); nothing was approved.`;

async function approve(
  db: Store,
  stateDir: string,
  id: string,
  forWhat: "session" | "call" | undefined,
  verbose: boolean,
  json: boolean,
  shown?: ApprovalRequest,
  /** why `--next` picked it, said in the JSON result */
  picked?: string,
): Promise<number> {
  const req = pendingOrFail(db, "approval", id);
  // Without a terminal (a script, a CI job, an agent's subprocess; the passphrase then comes from
  // PORTCULLIS_PASSPHRASE_FILE) nobody is shown what the approval covers before it is given, so
  // its reach is not chosen by default, as 'approve --next' does not choose it without one:
  // a session-wide grant nobody asked for is the costlier mistake. Said before the passphrase.
  if (forWhat === undefined && !hasTerminal())
    throw new UsageError(
      req.mode === "per-call"
        ? `approve: there is no terminal to confirm on; give --for call (tool ${displayName(req.tool)} of ${safeText(req.serverLabel)} needs a human decision for every call); nothing was approved.`
        : "approve: there is no terminal to confirm on; give --for session (this agent run's calls of the tool, in the current execution epoch) or --for call (this one call); nothing was approved.",
    );
  const scope = forWhat ?? (req.mode === "per-call" ? "call" : "session");
  if (scope === "session" && req.mode === "per-call") {
    throw new UsageError(`approve: ${PER_CALL_ONLY(req)}`);
  }
  // The review printed is the one signed, read once: the request and its listing are two reads,
  // and a review the agent wrote between them was printed while the other was signed (put back
  // before the decision, the stored one matched what was signed, and the gateway honoured a call
  // nobody was shown).
  const seen = shown ?? listed(db, req);
  if (!shown) showHuman(`${review(seen, verbose, true)}\n\n`, typedPassphrase(), json);
  // a row its gateway does not vouch for (vouch.ts): decided by its ID all the same, since the human
  // may know it to be theirs, but said before the passphrase, next to what is approved
  if (!shown && gatewayVouches(db, seen) === false)
    showHuman(`approve: ${NOT_VOUCHED_WARNING(id)}\n`, typedPassphrase(), json);
  // A one-call approval signs the digest of exactly these arguments: not over a review that cut
  // one or left one out (an agent pads the harmful part past what the card shows). Refused before
  // the passphrase; the verbose review shows them whole. A session grant covers the tool's calls
  // whatever their arguments, and a denial takes nothing: neither needs them whole.
  // Nor over a review that hid part of one as a secret: no review shows that part, --verbose
  // neither, and an agent can dress any text up as a credential.
  const partlyHidden = scope === "call" ? argumentsPartlyHidden(seen.review) : [];
  if (partlyHidden.length > 0) {
    throw new UsageError(
      `approve: ${partlyHiddenReason(partlyHidden, id, ` (${quotedCommand(`deny ${id}`, stateDir)})`)}; nothing was approved.`,
    );
  }
  const notShown = scope === "call" ? argumentsNotShownWhole(seen, verbose ? "whole" : "card") : [];
  if (notShown.length > 0) {
    throw new UsageError(
      `approve: the review above did not show this call's arguments whole: ${notShown.join("; ")}; a one-call approval is of exactly these arguments, so nothing was approved. ` +
        `See them whole, and approve, with ${quotedCommand(`approve ${id} --for call --verbose`, stateDir)}.`,
    );
  }
  // Said before the passphrase is asked, so the human can stop: the approval would cover nothing.
  const movedBefore = epochMovedOn(db, req.executionEpoch);
  if (movedBefore) showHuman(`${epochEndedNote(req, movedBefore)}\n`, typedPassphrase(), json);
  // What is approved is named in the lines the human reads as they type the passphrase: an agent
  // that ends the gateway of the request they meant (approve --next) has the next one decided.
  const what = subjectOf(seen);
  showHuman(
    scope === "session"
      ? `To approve ${what} for this agent run and execution epoch (until the run ends or the server changes): the passphrase confirms it.\n`
      : `To approve this one call of ${what} only: the passphrase confirms it.\n`,
    typedPassphrase(),
    json,
  );
  const { by, signer } = await verifyHuman(db, stateDir, "approve", `approve ${what} (${id})`);
  // What was shown is what is signed: a review changed in the store since then is not decided.
  const reviewed = reviewDigest(seen.review);
  const decided = decideRequest(db, id, { approve: true, for: scope, reviewed }, by, signer, stateDir);
  const grant = decided.grant!;
  if (json) {
    // the whole result as one object: what a script needs without parsing the sentence below
    writeResult({
      ...about(req),
      decision: "approved",
      for: scope,
      grant,
      coversNothing: decided.epochMovedOn !== null,
      serverEpochNow: decided.epochMovedOn,
      ...(picked !== undefined ? { picked } : {}),
    });
    return EXIT_OK;
  }
  process.stdout.write(`approved ${id}: grant ${grant.grant} (${grant.mode}, until ${grant.expiresWhen})\n`);
  // The epoch may have ended while the passphrase was typed: what was decided is what counts.
  if (decided.epochMovedOn) {
    process.stdout.write(
      `it covers nothing: it is bound to execution epoch ${req.executionEpoch}, which is no longer the server's ` +
        `(now ${decided.epochMovedOn}); the call it approved is refused as stale (authorization_stale), ` +
        `and a call under the new epoch needs a new approval\n`,
    );
  }
  return EXIT_OK;
}

/**
 * What the human must read before deciding, on stdout and, when `asksOnTerminal` (the passphrase
 * or the choice will be typed on the controlling terminal) and stdout is not that terminal, on the
 * terminal too. An agent whose commands share the human's terminal runs `approve ID --for session
 * > /dev/null`: the review went to the agent, and the human saw a passphrase prompt with nothing
 * above it.
 */
function showHuman(text: string, asksOnTerminal: boolean, json: boolean): void {
  // with --json, standard output is the result's alone: the review goes to standard error
  const out = json ? process.stderr : process.stdout;
  out.write(text);
  if (!asksOnTerminal || out.isTTY) return;
  let fd: number;
  try {
    fd = openSync("/dev/tty", "w");
  } catch {
    return; // no terminal: nothing is asked there either
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

/** Whether the passphrase will be typed on the terminal (no passphrase file given). */
function typedPassphrase(): boolean {
  return !process.env[PASSPHRASE_FILE_ENV];
}

/** What a request asks for, as the review names it: the tool, on the server label. */
function subjectOf(req: ApprovalRequest): string {
  // (a review rewritten in the store may lack its parts: the request's own columns then; such a
  // request is refused when decided, as one whose review says otherwise than its row)
  const r = req.review as Partial<ApprovalRequest["review"]> | undefined;
  const tool = typeof r?.tool?.name === "string" ? r.tool.name : req.tool;
  const label = typeof r?.serverLabel === "string" ? r.serverLabel : req.serverLabel;
  return `${displayName(tool)} on ${safeText(label)}`;
}

/** The warning shown before approving a request whose epoch the server has left. */
function epochEndedNote(req: ApprovalRequest, now: string): string {
  return (
    `Note: this request was made under execution epoch ${req.executionEpoch}; the server has been ` +
    `replaced since (its epoch is now ${now}). An approval is bound to the epoch its request named, ` +
    `so approving it covers nothing under the new epoch: the call is refused as stale.`
  );
}

async function deny(
  db: Store,
  stateDir: string,
  id: string,
  reason: string | undefined,
  verbose: boolean,
  json: boolean,
  /** set by `--next`, which showed the review already: why it picked this request, and that review */
  picked?: { why: string; shown: ApprovalRequest },
): Promise<number> {
  const req = pendingOrFail(db, "denial", id);
  if (picked === undefined)
    showHuman(`${review(listed(db, req), verbose, true)}\n\n`, typedPassphrase(), json);
  const { by, signer } = await verifyHuman(db, stateDir, "deny", `deny ${subjectOf(req)} (${id})`);
  // the review the human was shown: a denial of it is made even over a row rewritten since the
  // gateway wrote it (requests.ts, deniedAsShown)
  const reviewed = reviewDigest((picked?.shown ?? req).review);
  const denial: Decision =
    reason === undefined ? { approve: false, reviewed } : { approve: false, reason, reviewed };
  const decided = decideRequest(db, id, denial, by, signer, stateDir);
  if (decided.rowChanged)
    process.stderr.write(`portcullis deny: ${deniedOverRewrittenRow(id, decided.rowChanged)}\n`);
  if (json)
    writeResult({
      ...about(req),
      decision: "denied",
      reason: reason ?? null,
      ...(decided.rowChanged ? { rowChanged: decided.rowChanged } : {}),
      ...(picked !== undefined ? { picked: picked.why } : {}),
    });
  else process.stdout.write(`denied ${id}\n`);
  return EXIT_OK;
}

/**
 * What `deny` says of a denial made over a row rewritten in the store since its gateway wrote it
 * (requests.ts, deniedAsShown): made all the same, and what that does to the call.
 */
function deniedOverRewrittenRow(id: string, column: string): string {
  return safeText(
    `approval request ${id} does not ask what its review shows (its ${column} was changed in the store since the gateway wrote it); it is denied all the same, since a denial only takes authority away. The denial is signed over the row as it reads now, which is what the gateway verifies: the call waiting on it is refused (approval_denied), and nothing was granted.`,
  );
}

async function revoke(db: Store, stateDir: string, grant: string, json: boolean): Promise<number> {
  const g = getGrant(db, grant);
  if (!g) throw new GrantError(`there is no grant ${grant}`, "not-found");
  if (g.revokedAt) throw new GrantError(`grant ${grant} was already revoked at ${g.revokedAt}`, "not-active");
  if (g.endedAt)
    throw new GrantError(`grant ${grant} already ended at ${g.endedAt} (${g.endedReason})`, "not-active");
  const found = activeGrants(db).find((a) => a.grant === grant);
  if (found && !json) process.stdout.write(`${renderGrant(found)}\n\n`);
  revokeGrant(db, grant, `${userName()} via 'portcullis revoke' (pid ${process.pid})`, stateDir);
  if (json) writeResult({ decision: "revoked", ...publicGrant(g), request: g.request });
  else process.stdout.write(`revoked ${grant}: it stops covering calls from the next call on\n`);
  return EXIT_OK;
}

/** What a decision's JSON result says of its request (names and ids, never an argument's value). */
function about(req: ApprovalRequest) {
  return {
    request: req.request,
    agentRun: req.agentRun,
    serverLabel: req.serverLabel,
    tool: req.tool,
    executionEpoch: req.executionEpoch,
    mode: req.mode,
  };
}

/** `--json`: the one object on standard output (escaped as every --json output is). */
function writeResult(result: Record<string, unknown>): void {
  process.stdout.write(`${printableJson(result)}\n`);
}

/**
 * What `approvals ID` was after (one request's review) and where it is: the listing shows every
 * pending one, and `approve ID` shows that one before deciding. "takes no arguments" alone left
 * the user guessing.
 */
const APPROVALS_LIST_ALL =
  "; it lists every pending request with its review ('portcullis approve ID' or 'portcullis deny ID' shows one and decides it)";
