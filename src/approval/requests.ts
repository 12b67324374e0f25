import { dirname } from "node:path";
import { ulid } from "ulid";
import { AuditLog } from "../audit/log.js";
import type { CatalogDiff } from "../catalog/types.js";
import { DecisionSigner } from "../keyring/approver.js";
import type { Store } from "../store/db.js";
import { AN_OBJECT, LIST_OF_NAMES, storedJson } from "../store/storedJson.js";
import { StoreFiles } from "../store/storeFiles.js";
import { sameJson } from "../util/canonical.js";
import type { ChainEntry } from "./chain.js";
import {
  type DecisionStatement,
  decisionDigest,
  denialStatement,
  grantStatement,
  reviewDigest,
} from "./decision.js";
import { decisionEvent } from "./decisionRecord.js";
import type { Grant, GrantRecord } from "./grants.js";
import { getGrant, grantsWritten } from "./grants.js";
import { argumentsPartlyHidden, partlyHiddenReason } from "./hiddenArguments.js";
import { approvalNotHonouredBy } from "./olderGateway.js";
import { passkeyCounterUsed } from "./passkeyRows.js";
import { perCallOnlyReason } from "./perCallOnly.js";
import { getRun } from "./runs.js";
import { epochMovedOn } from "./serverEpoch.js";

/** What the human is shown before deciding (stored with the request, rendered by the CLI). */
export interface Review {
  request: string;
  createdAt: string;
  expiresAt: string;
  agentRun: { run: string; startedAt: string; chainDigest: string; chain: ChainEntry[] };
  serverLabel: string;
  epoch: {
    current: string;
    /** the epoch of the most recent grant for this server label (any run), null when there was none */
    lastApproved: string | null;
    /** execution record parts that differ from the last approved epoch's; null when nothing to compare */
    changedParts: string[] | null;
    /** one plain line: "first approval for this server", "same epoch as the last approval", … */
    summary: string;
    /** the current execution record, as captured at launch by the supervisor (no secret values) */
    record: Record<string, unknown> | null;
    /**
     * Why the current epoch began (its EpochReason: "launch", "replaced"…), when known. Of a
     * replaced epoch the record's process was started before the epoch (a watcher whose worker
     * was swapped), so the review says when its code was replaced instead (epochBegan). Absent
     * from reviews stored before it existed (the key left out, so their digest is unchanged),
     * which are shown as before.
     */
    reason?: string;
  };
  catalog: {
    revision: number;
    /** the catalog revision of the most recent grant for this label, null when there was none */
    lastApprovedRevision: number | null;
    /** classification of the whole diff since the last approved revision ("expands" when any entry does) */
    classification: "expands" | "narrows" | "cosmetic" | null;
    /** renderDiff output, or one line saying why there is no diff */
    rendered: string;
    /**
     * The diff itself, each of the server's pieces redacted on its own (shownDiff), when there is
     * one; `rendered` is then its rendering. It is what the review is shown from: the diff's own
     * words (`passwordLength: property added`) show, no secret does. Absent from reviews stored
     * before it existed, whose `rendered` is the raw rendering and is shown redacted whole.
     */
    diff?: CatalogDiff;
  };
  tool: {
    name: string;
    fingerprint: string;
    mode: "session" | "per-call";
    /** the tool as the current catalog lists it: description, inputs with defaults and enums, hints */
    rendered: string;
    /**
     * true when the request is no tool's but a guarded read's (resources/read …, a listen's uri):
     * `rendered` is then the gateway's own description of that MCP request, not a server's words.
     * Set from the call the guard made (ApprovedCall.read), never from a definition a server wrote.
     */
    gatewayWords?: true;
    /** this tool compared with the definition last granted for this label, when there was one */
    sinceLastGrant: {
      grant: string;
      /** the catalog revision the grant was given at */
      revision: number;
      fingerprint: string;
      classification: string;
      rendered: string;
      /** as `catalog.diff`: the diff redacted piece by piece, absent from older reviews and when there is none */
      diff?: CatalogDiff;
    } | null;
  };
  credentialScope: string[];
  /** "this server declares no per-tool scopes: …" when the tool may use every credential */
  scopeNote?: string;
  /**
   * Destinations ("host:port") the current epoch's server contacted (through its egress proxy)
   * that the last approved epoch's never did; absent when there are none, or no proxy ran.
   */
  newDestinations?: string[];
  /** the effective arguments (schema defaults applied): every name, its value, where it came from */
  arguments: { name: string; value: unknown; note?: string }[];
}

export type RequestState = "pending" | "approved" | "denied" | "expired" | "cancelled";

export interface ApprovalRequest {
  request: string;
  agentRun: string;
  serverLabel: string;
  executionEpoch: string;
  catalogRevision: number;
  tool: string;
  fingerprint: string;
  definition: Record<string, unknown> | null;
  credentialScope: string[];
  mode: "session" | "per-call";
  review: Review;
  createdAt: string;
  expiresAt: string;
  state: RequestState;
  decidedAt: string | null;
  decidedBy: string | null;
  decisionFor: "session" | "call" | null;
  reason: string | null;
  grant: string | null;
  /** the digest of the held call's arguments (a per-call approval is bound to it) */
  argumentsDigest: string | null;
  /** a denial's signature by the approver key (approvals are signed on their grant) */
  decisionSignature: string | null;
  /**
   * Set when a column of the row other than the review cannot be read (storedJson): which one and
   * why. Such a request is shown as unreadable and never decided, as one whose review is no review.
   */
  unreadable?: string;
}

interface RequestDbRow {
  request: string;
  agent_run: string;
  server_label: string;
  execution_epoch: string;
  catalog_revision: number;
  tool: string;
  fingerprint: string;
  definition_json: string | null;
  credential_scope_json: string;
  mode: "session" | "per-call";
  review_json: string;
  created_at: string;
  expires_at: string;
  state: RequestState;
  decided_at: string | null;
  decided_by: string | null;
  decision_for: "session" | "call" | null;
  reason: string | null;
  grant_id: string | null;
  arguments_digest: string | null;
  decision_signature: string | null;
  /** absent when read through a statement that lists its columns; null in rows of older gateways (callWaitMigration) */
  call_wait?: string | null;
  call_wait_at?: string | null;
}

/**
 * The review stored with a request, as parsed. Any process of the user can rewrite it in the store:
 * text that is no JSON at all (`{`) is read as no review (null), as a stored `null` is, rather than
 * thrown for every reader of the row. Each reader then shows such a request as one whose review
 * cannot be read (the console's card, `portcullis approvals`), and decidableRequest refuses to
 * decide it (differsFromReview), as it does a review rewritten into `{}`.
 */
function storedReview(json: string): Review {
  try {
    return JSON.parse(json) as Review;
  } catch {
    return null as unknown as Review;
  }
}

function toRequest(r: RequestDbRow): ApprovalRequest {
  const table = "approval_requests";
  const definition =
    r.definition_json === null ? null : storedJson(r.definition_json, table, "definition_json", AN_OBJECT);
  const scope = storedJson(r.credential_scope_json, table, "credential_scope_json", LIST_OF_NAMES);
  // deny first: a scope that cannot be read is no scope (and the request cannot be decided)
  const unreadable = !scope.ok ? scope.why : definition && !definition.ok ? definition.why : undefined;
  return {
    ...(unreadable === undefined ? {} : { unreadable }),
    request: r.request,
    agentRun: r.agent_run,
    serverLabel: r.server_label,
    executionEpoch: r.execution_epoch,
    catalogRevision: r.catalog_revision,
    tool: r.tool,
    fingerprint: r.fingerprint,
    definition: definition?.ok ? definition.value : null,
    credentialScope: scope.ok ? scope.value : [],
    mode: r.mode,
    review: storedReview(r.review_json),
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    state: r.state,
    decidedAt: r.decided_at,
    decidedBy: r.decided_by,
    decisionFor: r.decision_for,
    reason: r.reason,
    grant: r.grant_id,
    argumentsDigest: r.arguments_digest,
    decisionSignature: r.decision_signature,
  };
}

export function newRequestId(): string {
  return ulid();
}

export function insertRequest(
  db: Store,
  r: Omit<
    ApprovalRequest,
    "state" | "decidedAt" | "decidedBy" | "decisionFor" | "reason" | "grant" | "decisionSignature"
  >,
): void {
  db.prepare(
    // the call that makes the request waits on it from the start (callWaitMigration)
    `INSERT INTO approval_requests (request, agent_run, server_label, execution_epoch, catalog_revision, tool,
       fingerprint, definition_json, credential_scope_json, mode, review_json, created_at, expires_at, state,
       arguments_digest, call_wait, call_wait_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, 'waiting', ?)`,
  ).run(
    r.request,
    r.agentRun,
    r.serverLabel,
    r.executionEpoch,
    r.catalogRevision,
    r.tool,
    r.fingerprint,
    r.definition ? JSON.stringify(r.definition) : null,
    JSON.stringify(r.credentialScope),
    r.mode,
    JSON.stringify(r.review),
    r.createdAt,
    r.expiresAt,
    r.argumentsDigest,
    r.createdAt,
  );
}

export function getRequest(db: Store, id: string): ApprovalRequest | null {
  const r = db.prepare("SELECT * FROM approval_requests WHERE request = ?").get(id) as
    | RequestDbRow
    | undefined;
  return r ? toRequest(r) : null;
}

export interface PendingRequest extends ApprovalRequest {
  /** false when the gateway that waits for this decision is gone: deciding would change nothing */
  waiting: boolean;
  /**
   * Whether a call of its gateway waits on the request right now (CallWaits, as the gateway
   * recorded it). false once the gateway is gone or the request expired; null when its gateway
   * records no such thing (a gateway of an older portcullis wrote the row).
   */
  callWaiting: boolean | null;
  /** since when a call waits on it (callWaiting true), else null */
  callWaitingSince: string | null;
  /** when and how its last waiting call stopped waiting, the request staying pending; else null */
  callLeft: { at: string; how: CallLeft } | null;
}

/**
 * How the last call waiting on a pending request stopped waiting: the client cancelled it
 * (`notifications/cancelled`, or a 2026-07-28 HTTP client closing its stream), its hold ended
 * (answered approval_timeout: the agent is told to retry the same call), it was answered
 * input_required (a 2026-07-28 call sent to the console: its client retries once it is decided),
 * or it was answered otherwise (an error of the gateway's).
 */
export type CallLeft = "cancelled" | "hold-ended" | "sent-to-console" | "answered";

const CALL_LEFT: readonly string[] = ["cancelled", "hold-ended", "sent-to-console", "answered"];

/**
 * What a row says of the calls waiting on it, for a request its live gateway may still use. Of
 * its two call-wait columns only: `approvals --watch` reads them without the rest of the row
 * (src/cli/watchedRows.ts).
 */
export function callWait(
  r: Pick<RequestDbRow, "call_wait" | "call_wait_at">,
  usable: boolean,
): Pick<PendingRequest, "callWaiting" | "callWaitingSince" | "callLeft"> {
  const at = r.call_wait_at ?? null;
  if (!usable) return { callWaiting: false, callWaitingSince: null, callLeft: null };
  if (r.call_wait === "waiting" && at) return { callWaiting: true, callWaitingSince: at, callLeft: null };
  if (r.call_wait && CALL_LEFT.includes(r.call_wait) && at)
    return { callWaiting: false, callWaitingSince: null, callLeft: { at, how: r.call_wait as CallLeft } };
  // not recorded (an older gateway), or not a value this version wrote: not known
  return { callWaiting: null, callWaitingSince: null, callLeft: null };
}

/** Pending requests, oldest first. */
export function pendingRequests(db: Store): PendingRequest[] {
  const rows = db
    .prepare("SELECT * FROM approval_requests WHERE state = 'pending' ORDER BY created_at, request")
    .all() as RequestDbRow[];
  return rows.map((r) => pendingOf(db, r));
}

function pendingOf(db: Store, r: RequestDbRow): PendingRequest {
  const run = getRun(db, r.agent_run);
  const waiting = !!run?.gatewayAlive && Date.parse(r.expires_at) > Date.now();
  return { ...toRequest(r), waiting, ...callWait(r, waiting) };
}

/** One pending request as the lists show it (its gateway alive, a call waiting on it), or undefined. */
export function listedPending(db: Store, id: string): PendingRequest | undefined {
  const r = db.prepare("SELECT * FROM approval_requests WHERE request = ? AND state = 'pending'").get(id) as
    | RequestDbRow
    | undefined;
  return r === undefined ? undefined : pendingOf(db, r);
}

/**
 * How far ahead of now a request may say it was made and still be listed by its time: clocks of
 * one machine agree, so only a row written by other means than a gateway says it was made later.
 */
const CLOCK_SLACK_MS = 60_000;

/**
 * One page of the pending requests as a list shows them (the console's Requests page, `approvals`),
 * newest first, the ones said to be made at a time still to come (or at no time an ISO string
 * holds) after all the others; and how many are pending in all. Any process of the user can write
 * rows into the store, thousands of them: only the page's own rows are read and drawn, so a flood
 * of them makes the page neither huge nor slow, and one dated in the future cannot stay above every
 * request a gateway makes from now on (listOrder in docs/console.md).
 */
export function pendingPage(
  db: Store,
  offset: number,
  limit: number,
  now = Date.now(),
): { total: number; rows: PendingRequest[] } {
  const total = (
    db.prepare("SELECT COUNT(*) AS n FROM approval_requests WHERE state = 'pending'").get() as { n: number }
  ).n;
  const soon = new Date(now + CLOCK_SLACK_MS).toISOString();
  const rows = db
    .prepare(
      `SELECT * FROM approval_requests WHERE state = 'pending'
        ORDER BY (typeof(created_at) != 'text' OR created_at > ? OR created_at NOT GLOB '[0-9][0-9][0-9][0-9]-*') ASC,
          created_at DESC, request DESC
        LIMIT ? OFFSET ?`,
    )
    .all(soon, limit, offset) as RequestDbRow[];
  return { total, rows: rows.map((r) => pendingOf(db, r)) };
}

/**
 * Records in a pending request's row whether a call waits on it (`waiting`), or how the last one
 * stopped waiting, and when. False when the request is no longer pending (nothing written).
 */
export function recordCallWait(db: Store, id: string, wait: "waiting" | CallLeft, at: string): boolean {
  return (
    db
      .prepare(
        "UPDATE approval_requests SET call_wait = ?, call_wait_at = ? WHERE request = ? AND state = 'pending'",
      )
      .run(wait, at, id).changes === 1
  );
}

/**
 * Moves a pending request to a final state without a human decision (expired,
 * cancelled). Returns false when it was no longer pending (a decision won the race).
 */
export function closeRequest(db: Store, id: string, state: "expired" | "cancelled", reason: string): boolean {
  return (
    db
      .prepare(
        "UPDATE approval_requests SET state = ?, decided_at = ?, reason = ? WHERE request = ? AND state = 'pending'",
      )
      .run(state, new Date().toISOString(), reason, id).changes === 1
  );
}

/** The `approval_expired` audit event of a request closed unanswered: one shape for the gateway and a lister. */
export function expiredEvent(req: ApprovalRequest, reason: string, by: string) {
  return {
    type: "approval_expired" as const,
    run: req.agentRun,
    serverLabel: req.serverLabel,
    epoch: req.executionEpoch,
    tool: req.tool,
    fingerprint: req.fingerprint,
    approvalRequest: req.request,
    createdAt: req.createdAt,
    expiresAt: req.expiresAt,
    reason,
    by,
  };
}

/** What identifies "the same call" across retries (see `earlierRequest`). */
export interface SameCall {
  agentRun: string;
  serverLabel: string;
  executionEpoch: string;
  tool: string;
  fingerprint: string;
  mode: "session" | "per-call";
  argumentsDigest: string;
}

/**
 * The newest request made for exactly this call (same run, label, epoch, tool version, mode and
 * argument digest) that a retry can still use, until the request's own expiry: pending (the retry
 * joins it), approved (its one-call grant may still be unused), or denied (the denial is told).
 * An approval is not kept past that expiry: a retry later than that asks again. Null when none.
 * `own`: the requests the run's gateway wrote itself; a pending row that is not one of them is
 * passed over. Any process of the user can copy a pending request under a newer date: a retry
 * that joined the copy waited for a decision that can never verify (a decided row is judged by
 * its signed decision, so approved and denied rows need no such filter).
 */
export function earlierRequest(
  db: Store,
  c: SameCall,
  now = new Date(),
  own?: ReadonlySet<string>,
): ApprovalRequest | null {
  const r = db
    .prepare(
      `SELECT * FROM approval_requests
        WHERE agent_run = ? AND server_label = ? AND execution_epoch = ? AND tool = ? AND fingerprint = ?
          AND mode = ? AND arguments_digest = ?
          AND state IN ('pending', 'approved', 'denied') AND expires_at > ?
          AND (? IS NULL OR state <> 'pending' OR request IN (SELECT value FROM json_each(?)))
        ORDER BY created_at DESC, request DESC LIMIT 1`,
    )
    .get(...sameCallValues(c, now), ...ownValues(own)) as RequestDbRow | undefined;
  return r ? toRequest(r) : null;
}

/** The placeholders of earlierRequest's `own` filter: no filter when not given. */
function ownValues(own: ReadonlySet<string> | undefined): (string | null)[] {
  if (own === undefined) return [null, null];
  const ids = JSON.stringify([...own]);
  return [ids, ids];
}

/**
 * The approved requests made for this call under another epoch than `c.executionEpoch` (same
 * run, label, tool, mode and argument digest; any tool version), newest decision first, within
 * the requests' own expiry as `earlierRequest` keeps it: the approvals a change of epoch made
 * stale before the call could use them.
 */
export function approvalsOfOlderEpochs(
  db: Store,
  c: Omit<SameCall, "fingerprint">,
  now = new Date(),
): ApprovalRequest[] {
  const rows = db
    .prepare(
      `SELECT * FROM approval_requests
        WHERE agent_run = ? AND server_label = ? AND execution_epoch != ? AND tool = ?
          AND mode = ? AND arguments_digest = ? AND state = 'approved' AND expires_at > ?
        ORDER BY decided_at DESC, request DESC LIMIT 16`,
    )
    .all(
      c.agentRun,
      c.serverLabel,
      c.executionEpoch,
      c.tool,
      c.mode,
      c.argumentsDigest,
      now.toISOString(),
    ) as RequestDbRow[];
  return rows.map(toRequest);
}

/** The pending requests of one run, oldest first. */
export function pendingRequestsOfRun(db: Store, agentRun: string): ApprovalRequest[] {
  return (
    db
      .prepare(
        "SELECT * FROM approval_requests WHERE agent_run = ? AND state = 'pending' ORDER BY created_at, request",
      )
      .all(agentRun) as RequestDbRow[]
  ).map(toRequest);
}

/**
 * The pending requests of this call's tool version under the same run, label, epoch and mode whose
 * arguments differ from `c.argumentsDigest` (SameCall without the digest's equality): the requests
 * a newer call of the same tool may supersede (HumanAsker.supersede).
 */
export function pendingOfSameTool(db: Store, c: SameCall, now = new Date()): ApprovalRequest[] {
  return (
    db
      .prepare(
        `SELECT * FROM approval_requests
          WHERE agent_run = ? AND server_label = ? AND execution_epoch = ? AND tool = ? AND fingerprint = ?
            AND mode = ? AND arguments_digest != ? AND state = 'pending' AND expires_at > ?
          ORDER BY created_at, request LIMIT 64`,
      )
      .all(...sameCallValues(c, now)) as RequestDbRow[]
  ).map(toRequest);
}

/** The values of `earlierRequest`'s and `pendingOfSameTool`'s placeholders, in their order. */
function sameCallValues(c: SameCall, now: Date): string[] {
  return [
    c.agentRun,
    c.serverLabel,
    c.executionEpoch,
    c.tool,
    c.fingerprint,
    c.mode,
    c.argumentsDigest,
    now.toISOString(),
  ];
}

/** Pending requests of one run and label whose time is up, oldest first. */
export function overdueRequests(db: Store, agentRun: string, serverLabel: string, now = new Date()) {
  return (
    db
      .prepare(
        `SELECT * FROM approval_requests WHERE agent_run = ? AND server_label = ? AND state = 'pending'
          AND expires_at <= ? ORDER BY expires_at, request`,
      )
      .all(agentRun, serverLabel, now.toISOString()) as RequestDbRow[]
  ).map(toRequest);
}

/** When the next pending request of one run and label expires (ms since the epoch), or null. */
export function nextExpiry(db: Store, agentRun: string, serverLabel: string): number | null {
  const r = db
    .prepare(
      "SELECT MIN(expires_at) AS at FROM approval_requests WHERE agent_run = ? AND server_label = ? AND state = 'pending'",
    )
    .get(agentRun, serverLabel) as { at: string | null } | undefined;
  return r?.at ? Date.parse(r.at) : null;
}

/**
 * A human's decision. `reviewed`: the digest (reviewDigest) of the review the human was shown;
 * when given, a request whose stored review is no longer that one is not approved (it changed
 * between showing and deciding: show it again). A denial that gives it is made even when the
 * request's row no longer asks what that review shows (deniedAsShown).
 */
export type Decision =
  | { approve: true; for: "session" | "call"; reviewed?: string }
  | { approve: false; reason?: string; reviewed?: string };

export class DecisionError extends Error {
  override name = "DecisionError";
  constructor(
    message: string,
    /** not-found and not-allowed are the caller's to fix (exit 2); not-pending is the request's state (exit 1) */
    readonly kind: "not-found" | "not-pending" | "not-allowed",
  ) {
    super(message);
  }
}

/** The request `id`, still pending; a DecisionError saying why not otherwise. */
export function pendingRequest(db: Store, id: string): ApprovalRequest {
  const req = getRequest(db, id);
  if (!req) throw new DecisionError(`there is no approval request ${id}`, "not-found");
  if (req.state !== "pending") {
    throw new DecisionError(
      `approval request ${id} is no longer pending: it was ${req.state}${req.decidedAt ? ` at ${req.decidedAt}` : ""}`,
      "not-pending",
    );
  }
  return req;
}

export interface DecisionResult {
  request: ApprovalRequest;
  /** the grant an approval created (null for a denial) */
  grant: Grant | null;
  /**
   * The server's current epoch when it is no longer the one the request named (serverEpoch.ts):
   * an approval is then bound to an epoch that ended, and covers nothing. null otherwise.
   */
  epochMovedOn: string | null;
  /**
   * A denial made over a row that no longer asks what its review shows (deniedAsShown): the first
   * column that says otherwise ("tool", "execution epoch"…), for the decider to say so. Absent
   * otherwise.
   */
  rowChanged?: string;
}

/**
 * A passkey's proof of a decision: the statement chosen before the authenticator was asked
 * (passkey.ts, preparePasskeyDecision: grant id and time fixed then) and the assertion over its
 * digest, already verified against the passkey pinned in the audit chain.
 */
export interface PasskeyProof {
  kind: "passkey";
  statement: DecisionStatement;
  /** the encoded assertion (passkeyAssertion.ts), stored where an Ed25519 signature would be */
  signature: string;
  /**
   * The verified assertion's signature counter (passkey.ts, completePasskeyDecision): compared
   * with the last one seen and stored in the decision's transaction (passkeyCounterUsed), so that
   * a decision and its counter are recorded together or not at all. `floor` is the counter pinned
   * at registration.
   */
  counter?: { credentialId: string; value: number; floor: number };
}

/** What a decision is signed with: the approver key (after the passphrase) or a passkey's assertion. */
export type DecisionProof = DecisionSigner | PasskeyProof;

/**
 * The request `id` if `decision` can be made on it now: pending, not expired, its run alive, and
 * not a session approval of a per-call tool. A DecisionError saying why not otherwise.
 */
export function decidableRequest(db: Store, id: string, decision: Decision): ApprovalRequest {
  const req = pendingRequest(db, id);
  if (Date.parse(req.expiresAt) <= Date.now()) {
    throw new DecisionError(`approval request ${id} expired at ${req.expiresAt}`, "not-pending");
  }
  const run = getRun(db, req.agentRun);
  if (!run || run.endedAt) {
    throw new DecisionError(`the agent run of approval request ${id} has ended`, "not-pending");
  }
  // Asked again here, under the write lock: the gateway may have died while the human read the
  // review and typed the passphrase (seconds, minutes), after the sweep that closes the requests
  // of dead gateways ran. A decision then would be recorded as given for a call that never runs.
  if (run.gateway === "gone") {
    throw new DecisionError(
      `the gateway that asked approval request ${id} (pid ${run.gatewayPid}) is gone: its call will never run, so nothing was decided`,
      "not-pending",
    );
  }
  // an approval its gateway (an older portcullis's, running since before an upgrade) would find
  // unverifiable, and not honour: said, and not made (olderGateway.ts)
  const notHonoured = decision.approve ? approvalNotHonouredBy(db, run, id) : null;
  if (notHonoured) throw new DecisionError(notHonoured, "not-allowed");
  if (req.unreadable !== undefined) {
    throw new DecisionError(
      `approval request ${id} cannot be decided: its row cannot be read (${req.unreadable}), since something rewrote it in the store; nothing was decided, and it expires at ${req.expiresAt}`,
      "not-pending",
    );
  }
  const differs = differsFromReview(req);
  if (differs && !deniedAsShown(req, decision)) {
    throw new DecisionError(
      `approval request ${id} does not ask what its review shows (its ${differs} was changed in the store since the gateway wrote it): nothing was decided`,
      "not-pending",
    );
  }
  if (decision.approve && decision.for === "session" && req.mode === "per-call") {
    throw new DecisionError(perCallOnlyReason(req), "not-allowed");
  }
  // A one-call approval signs the real arguments: not over a review that hid part of one.
  if (decision.approve && decision.for === "call") {
    const hidden = argumentsPartlyHidden(req.review);
    if (hidden.length > 0) throw new DecisionError(partlyHiddenReason(hidden, id), "not-allowed");
  }
  return req;
}

/**
 * Whether `decision` is a denial of the very review the human was shown (its digest is the stored
 * review's): made even when the row's columns were rewritten. A denial only takes authority away,
 * and a human's "no" is not refused because something tampered with the row. It is signed over
 * the row as it reads now, which is what the gateway waiting on the request verifies
 * (DecisionVerifier.verifyDenial, over denialStatement of the row it reads): its call is refused
 * `approval_denied` rather than left waiting out its hold. Such a signature grants nothing (it
 * says "deny"), and it ends only the request it names. Without `reviewed` (a decider that showed
 * no review: the console's denial of a request drawn as unreadable) the row is refused as before.
 */
function deniedAsShown(req: ApprovalRequest, decision: Decision): boolean {
  return (
    !decision.approve && decision.reviewed !== undefined && decision.reviewed === reviewDigest(req.review)
  );
}

/**
 * The first column of the request's row that says otherwise than its review, or null. A decision
 * is signed over the row's columns (the grant is made from them) while the human reads the review:
 * a row rewritten in the store would have the human grant what they never saw. (The gateway also
 * honours only a grant of what it asked: src/approval/honoured.ts.)
 */
function differsFromReview(req: ApprovalRequest): string | null {
  const r = req.review as Partial<Review> | undefined;
  const scopes = Array.isArray(r?.credentialScope) ? r.credentialScope : null;
  if (r?.agentRun?.run !== req.agentRun) return "agent run";
  if (r.serverLabel !== req.serverLabel) return "server label";
  if (r.epoch?.current !== req.executionEpoch) return "execution epoch";
  if (r.tool?.name !== req.tool) return "tool";
  if (r.tool.fingerprint !== req.fingerprint) return "tool fingerprint";
  if (r.tool.mode !== req.mode) return "mode";
  if (
    !scopes ||
    scopes.length !== req.credentialScope.length ||
    !req.credentialScope.every((sc) => scopes.includes(sc))
  )
    return "credential scope";
  return null;
}

/** The grant an approval of `req` creates, with the id and time given. */
function grantFor(req: ApprovalRequest, forWhat: "session" | "call", grantId: string, now: string): Grant {
  return {
    grant: grantId,
    agentRun: req.agentRun,
    serverLabel: req.serverLabel,
    executionEpoch: req.executionEpoch,
    toolScope: [{ name: req.tool, fingerprint: req.fingerprint }],
    credentialScope: req.credentialScope,
    mode: forWhat === "session" ? "session" : "per-call",
    issuedAt: now,
    expiresWhen: forWhat === "session" ? "agent-run-ends" : "this-call",
  };
}

/**
 * What deciding `req` this way signs: the statement of the grant an approval creates (id
 * `grantId`), or of the denial, made at `now`.
 */
export function decisionStatement(
  req: ApprovalRequest,
  decision: Decision,
  grantId: string,
  now: string,
): DecisionStatement {
  if (!decision.approve) return denialStatement({ ...req, decidedAt: now, reason: decision.reason ?? null });
  const grant = grantFor(req, decision.for, grantId, now);
  const argumentsDigest = grant.mode === "per-call" ? req.argumentsDigest : null;
  return grantStatement({
    ...grant,
    request: req.request,
    argumentsDigest,
    reviewDigest: reviewDigest(req.review),
  });
}

/** Refuses to approve `req` when the human was shown another review than the stored one. */
export function sameReviewAsShown(req: ApprovalRequest, decision: Decision): void {
  if (!decision.approve || decision.reviewed === undefined) return;
  if (decision.reviewed !== reviewDigest(req.review)) {
    throw new DecisionError(
      `approval request ${req.request} changed after it was shown (its review in the store is not the one reviewed); show it again and decide on what it says now`,
      "not-pending",
    );
  }
}

/** The signature `proof` gives `statement`; a passkey's only if it signed exactly this statement. */
function signatureOf(statement: DecisionStatement, proof: DecisionProof): string {
  if (proof instanceof DecisionSigner) return proof.sign(decisionDigest(statement));
  if (!sameJson(statement, proof.statement)) {
    throw new DecisionError(
      `approval request ${statement.request} is not what the passkey signed (it changed since); decide again`,
      "not-pending",
    );
  }
  return proof.signature;
}

/**
 * The single code path that decides an approval request, used by the CLI, the demo and the
 * console (`by` says who decided: the CLI after the passphrase, a passkey, or "demo"). The
 * decision is signed with `proof`: the approver key, which only an unlocked keyring gives, or a
 * passkey's verified assertion over the statement prepared for it. Without the passphrase or a
 * pinned passkey there is no decision a gateway honours.
 * Approving creates the grant in the same transaction as the decision, so a
 * waiting gateway either sees both or neither; a request that expired or was
 * cancelled in the meantime cannot be approved.
 * The decision's audit record (`approval_granted`, `approval_denied`: decisionRecord.ts) is
 * appended in that same transaction: a decision is in the chain exactly once, before any call
 * uses it, or it is not made. `stateDir` holds the keyring the record is sealed to (by default
 * the store's directory).
 */
export function decideRequest(
  db: Store,
  id: string,
  decision: Decision,
  by: string,
  proof: DecisionProof,
  stateDir: string = dirname(db.name),
): DecisionResult {
  // Opened first: without a keyring the decision could not be recorded, so it is not made.
  const audit = AuditLog.open(db, stateDir);
  try {
    return db
      .transaction((): DecisionResult => {
        // Under the write lock, before anything is written: a decision made through a store file
        // deleted or replaced since this process opened it would be lost with that file, or (its
        // process closing the store last) copied over the records of the processes that opened
        // the store since. The console and `approve` hold the store open while a human reads the
        // review and proves who they are, which can take minutes.
        StoreFiles.of(db).assertKept();
        if (!(proof instanceof DecisionSigner) && proof.counter) {
          const c = proof.counter;
          passkeyCounterUsed(db, c.credentialId, c.value, c.floor, new Date().toISOString());
        }
        const req = decidableRequest(db, id, decision);
        sameReviewAsShown(req, decision);
        const result = recordDecision(db, req, decision, by, proof);
        // a denial decidableRequest let through over a rewritten row: the decider says so
        const rowChanged = decision.approve ? null : differsFromReview(req);
        if (rowChanged) result.rowChanged = rowChanged;
        // Last in the transaction (nested: a savepoint of it), so that nothing after it can roll
        // back the decision and leave this log's idea of the chain's head ahead of the store.
        audit.append(decisionEvent(result.request, result.grant));
        return result;
      })
      .immediate();
  } finally {
    audit.close();
  }
}

/**
 * Signs `decision` over `req` as read and writes it (the grant of an approval, the request's new
 * state), inside decideRequest's transaction, once every check passed. Exported for the tests that
 * play a decision path trusting a rewritten row (test/gateway/unsigned-columns.test.ts).
 */
export function recordDecision(
  db: Store,
  req: ApprovalRequest,
  decision: Decision,
  by: string,
  proof: DecisionProof,
): DecisionResult {
  const id = req.request;
  // a passkey signed a statement whose grant id and time were chosen when it was prepared
  const fixed = proof instanceof DecisionSigner ? null : proof.statement;
  const now = fixed?.issuedAt ?? new Date().toISOString();
  const grantId = fixed?.grant ?? ulid();
  const signature = signatureOf(decisionStatement(req, decision, grantId, now), proof);
  if (!decision.approve) {
    db.prepare(
      `UPDATE approval_requests SET state = 'denied', decided_at = ?, decided_by = ?, reason = ?,
         decision_signature = ? WHERE request = ?`,
    ).run(now, by, decision.reason ?? null, signature, id);
    return { request: getRequest(db, id)!, grant: null, epochMovedOn: null };
  }
  const grant = grantFor(req, decision.for, grantId, now);
  const argumentsDigest = grant.mode === "per-call" ? req.argumentsDigest : null;
  db.prepare(
    `INSERT INTO grants (grant_id, agent_run, server_label, execution_epoch, catalog_revision, tool_scope_json,
       tool_defs_json, credential_scope_json, mode, issued_at, expires_when, request, approved_by,
       arguments_digest, signature, review_digest)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    grant.grant,
    grant.agentRun,
    grant.serverLabel,
    grant.executionEpoch,
    req.catalogRevision,
    JSON.stringify(grant.toolScope),
    JSON.stringify({ [req.tool]: req.definition }),
    JSON.stringify(grant.credentialScope),
    grant.mode,
    grant.issuedAt,
    grant.expiresWhen,
    id,
    by,
    argumentsDigest,
    signature,
    reviewDigest(req.review),
  );
  grantsWritten(db);
  db.prepare(
    `UPDATE approval_requests SET state = 'approved', decided_at = ?, decided_by = ?, decision_for = ?, grant_id = ?
     WHERE request = ?`,
  ).run(now, by, decision.for, grant.grant, id);
  return { request: getRequest(db, id)!, grant, epochMovedOn: epochMovedOn(db, req.executionEpoch) };
}

/** The grant an approved request created. */
export function grantOfRequest(db: Store, req: ApprovalRequest): GrantRecord | null {
  return req.grant ? getGrant(db, req.grant) : null;
}
