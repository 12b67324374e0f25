import type { AuditEvent } from "./events.js";

/**
 * Two views from the same decrypted log (docs/audit-format.md, "Event fields"):
 *   sessions  each agent run: who ran, the epochs and catalog revisions it saw, its grants;
 *             then each gateway that had no agent run (gatewaysWithoutRunView)
 *   activity  each call: id, tool, epoch, catalog revision, grant, decision, outcome
 * Both read only the documented fields and tolerate missing ones.
 */

export interface ViewInput {
  seq: number;
  header: { time: string; writer: string; pid?: number };
  event: AuditEvent;
}

export interface SessionView {
  run: string;
  server: string | null;
  startedAt: string | null;
  endedAt: string | null;
  endReason: string | null;
  /** run_started.agent as written: the process chain that launched the gateway. */
  agent: unknown;
  /** Every execution epoch the run dealt with, in the order first seen. */
  epochs: string[];
  /** The catalog revisions served to the run (catalog_served). */
  revisions: { server: string | null; revision: number | string | null; epoch: string | null; at: string }[];
  grants: {
    grant: string | null;
    epoch: string | null;
    tools: unknown;
    credentialScope: unknown;
    mode: string | null;
    at: string;
  }[];
  /**
   * Approval requests; one the client gave up on (cancel, timeout) is `cancelled`, not denied;
   * one closed undecided (its time ran out, or its run ended) is `expired`.
   */
  approvals: { requested: number; granted: number; denied: number; cancelled: number; expired: number };
  /** The run's calls as `audit activity` lists them (callCounts): calls = counts.calls. */
  calls: number;
  /**
   * The run's calls with a record after its `run_ended` (begun, answered or closed after it): 0
   * as a rule, since a gateway ends its run once its calls are over. More: another process ended
   * the run while its gateway still served it (endReason `gateway_gone`, a gateway whose store
   * rows were edited to look gone: docs/security.md), and that gateway recorded these after.
   */
  callsAfterEnd: number;
  /**
   * The run has no `run_ended` in the log, and its row in the store says it ended: the store's word
   * only (`storedEnd`, given by the caller that has the store), never taken for the run's end or its
   * reason: an edit of the row (one that writes a reason a recording writer gives too, which the
   * gateway cannot tell from a recorded end), or an end that could not be recorded. Null otherwise.
   */
  endInStoreOnly: StoredEnd | null;
  refused: number;
  counts: CallCounts;
}

/** A run's end as the store's row holds it (src/approval/runs.ts, storedRunEnd). */
export interface StoredEnd {
  endedAt: string;
  reason: string | null;
}

/**
 * The one definition of what the views count, over activity entries, so `audit sessions` and
 * `audit activity` always agree. Every entry is one call except a superseded one (its intent was
 * closed because the decision was made again; the call appears again after it).
 */
export interface CallCounts {
  /** every call listed, superseded entries excepted */
  calls: number;
  /** forwarded: an answer came (ok or error) */
  answered: number;
  /** refused by the guard (any refusal code) */
  refused: number;
  /** arguments that did not validate (never forwarded) */
  invalid: number;
  /** cancelled by the client after its intent was written, never forwarded */
  cancelled: number;
  /**
   * closed without an answer: the process or the gateway went away (outcome unknown), a server
   * reached by URL answered it for a session it no longer knows (not run), or the gateway ended
   * the connection before it was sent (not run)
   */
  interrupted: number;
  /** an intent with no end yet (a call in flight) */
  pending: number;
}

export function callCounts(entries: Iterable<ActivityEntry>): CallCounts {
  const c: CallCounts = {
    calls: 0,
    answered: 0,
    refused: 0,
    invalid: 0,
    cancelled: 0,
    interrupted: 0,
    pending: 0,
  };
  for (const a of entries) {
    if (a.outcome === "superseded") continue;
    c.calls++;
    if (a.outcome === "refused") {
      if (a.decision === "invalid_arguments") c.invalid++;
      else c.refused++;
    } else if (a.outcome === "cancelled") c.cancelled++;
    else if (a.outcome === "interrupted" || a.outcome === "not-run") c.interrupted++;
    else if (a.outcome === "pending") c.pending++;
    else c.answered++;
  }
  return c;
}

export interface ActivityEntry {
  seq: number;
  at: string;
  run: string;
  /**
   * the call's JSON-RPC id as JSON text (`8`, `"8"`). Its intent is joined to its end by its
   * `callKey` where the records carry one (two calls of a run may share an id), else by this.
   */
  call: string | null;
  server: string | null;
  tool: string | null;
  epoch: string | null;
  revision: number | string | null;
  grant: string | null;
  /** "allowed", or why the call was refused (authorization_stale, catalog_stale, approval_denied, …). */
  decision: string;
  /**
   * "ok", "error", "tool-error", "refused", "interrupted" (no answer: the outcome is unknown),
   * "not-run" (sent to a server reached by URL, which answered it for a session it no longer
   * knows: it did not run it; or never sent because the gateway ended the connection while it was
   * decided, interruption `connection_ended`), "cancelled" (the client cancelled it after its intent; never
   * forwarded), "superseded" (its
   * decision was made again: the call appears again after it), or "pending" (no end written).
   * "refused" also ends a guarded read recorded and then not sent because no server process was
   * alive to take it, and a call or read decided while the server read none of its input
   * (decision `server_unavailable`).
   */
  outcome: string;
  /**
   * why a call_interrupted closed it (epoch_transition, gateway_gone, cancelled, redecided,
   * server_unavailable, connection_ended, listen_refused, gateway_error)
   */
  interruption: string | null;
  argumentsDigest: string | null;
  credentials: string[];
  endedAt: string | null;
  /**
   * How many ends the chain holds for the call (tool_result, call_interrupted; a refusal before
   * the intent, authorization_denied, is its end): 0 while pending, else 1. More than one: a
   * gateway closed the call as gone (`interruption` gateway_gone) while the gateway that had it in
   * flight still ran and later recorded its own end (its store rows edited to look gone:
   * docs/security.md). `outcome` and `endedAt` are then the last end's.
   */
  ends: number;
}

/**
 * A call's outcome as `audit activity`'s table and the console show it: a call with more than one
 * end says so (`ok (2 ends)`, see `ends`), never its last end alone.
 */
export function shownOutcome(a: Pick<ActivityEntry, "outcome" | "ends">): string {
  return a.ends > 1 ? `${a.outcome} (${a.ends} ends)` : a.outcome;
}

const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
/**
 * A call's JSON-RPC id as JSON text: the ids 8 and "8" are two requests (the gateway keeps them
 * apart), so they are two calls here too, and shown as `8` and `"8"`.
 */
const callId = (v: unknown): string | null =>
  typeof v === "string" || typeof v === "number" ? JSON.stringify(v) : null;
/** A call's JSON-RPC id as JSON text: as the client wrote it where its value does not carry that. */
const callText = (e: AuditEvent): string | null =>
  callId(e.call) ?? (typeof e.requestIdText === "string" ? e.requestIdText : callId(e.requestId));
const rev = (v: unknown): number | string | null =>
  typeof v === "number" || typeof v === "string" ? v : null;
const strings = (v: unknown): string[] =>
  typeof v === "string" ? [v] : Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
const serverOf = (e: AuditEvent): string | null => str(e.serverLabel) ?? str(e.server);

/**
 * The agent run an event belongs to: its `run` field; else the run last named by
 * the same writer (one gateway process serves one run), else the first run that
 * writer names later; null when its writer names no run at all (a gateway whose client
 * never sent a request: docs/architecture.md, "Session").
 */
function runAttribution(records: ViewInput[]): (r: ViewInput) => string | null {
  const firstRun = new Map<string, string>();
  for (const { header, event } of records) {
    const run = str(event.run);
    if (run && !closesAnotherGateway(event) && !firstRun.has(header.writer)) firstRun.set(header.writer, run);
  }
  const lastRun = new Map<string, string>();
  return ({ header, event }) => {
    const run = str(event.run);
    if (run) {
      if (!closesAnotherGateway(event)) lastRun.set(header.writer, run);
      return run;
    }
    return lastRun.get(header.writer) ?? firstRun.get(header.writer) ?? null;
  };
}

/**
 * A record a process writes of another gateway's run: a call or the run of a gateway it judged
 * gone, closed (reason gateway_gone). It names that run, but the writer does not serve it: the
 * writer's own records without a `run` (its server's start, a gateway whose client sent no
 * request) are not that run's. Taken for it, they added another server's epochs to the run ended
 * as gone, and hid a gateway that had no agent run.
 */
function closesAnotherGateway(e: AuditEvent): boolean {
  return (e.type === "call_interrupted" || e.type === "run_ended") && e.reason === "gateway_gone";
}

/**
 * Events a command writes about the whole state directory (the approver key's pin, the vault
 * being unlocked or locked, the keyring's passphrase changed or its keys rotated), not about an agent run: they start
 * no session of their own.
 */
const NOT_ABOUT_A_RUN: ReadonlySet<string> = new Set([
  "approver_key_pinned",
  "passphrase_changed",
  "keys_rotated",
  "passkey_pinned",
  "passkey_removed",
  "vault_unlocked",
  "vault_locked",
]);

/**
 * A gateway that wrote records but had no agent run: its client sent no request (or none but a
 * `server/discover` probe), so it launched its server and stopped. `audit sessions` lists it
 * apart from the runs, never as a run: nothing an agent did is in it, and it is never "open".
 */
export interface GatewayWithoutRun {
  /** the writer id of its records (one per gateway process) and that process's pid */
  writer: string;
  pid: number | null;
  server: string | null;
  /** its first record (the server's launch, as a rule) */
  startedAt: string;
  /**
   * when the gateway stopped its server as it ended (server_exited `why: shutdown`, no launch
   * after it); null when no such end is recorded (the gateway was killed, gave up after a crash
   * loop, or still runs: a paused one waits for its files to change)
   */
  endedAt: string | null;
  /** `shutdown` with endedAt, null with endedAt null */
  endReason: string | null;
  /**
   * the last exit of its server that did not end the gateway (a crash, a replacement), when no
   * launch and no end came after it: what is known of a gateway whose end is not recorded
   */
  lastExit: { at: string; why: string | null } | null;
  /** the execution epochs it launched, in order */
  epochs: string[];
}

/**
 * Records that belong to no agent run: neither named with a run nor written by a gateway that
 * names one. A writer with calls but no run id (records older than runs) is a run, listed under
 * its writer id, as activityView lists its calls.
 */
function runlessRecords(records: ViewInput[]): Map<string, ViewInput[]> {
  const runOf = runAttribution(records);
  const callWriters = new Set(activityView(records).map((a) => a.run));
  const out = new Map<string, ViewInput[]>();
  for (const r of records) {
    if (runOf(r) !== null || callWriters.has(r.header.writer)) continue;
    if (NOT_ABOUT_A_RUN.has(r.event.type)) continue;
    const list = out.get(r.header.writer) ?? [];
    list.push(r);
    out.set(r.header.writer, list);
  }
  return out;
}

/** The gateways that had no agent run, in the order of their first record. */
export function gatewaysWithoutRunView(input: Iterable<ViewInput>): GatewayWithoutRun[] {
  const out: GatewayWithoutRun[] = [];
  for (const [writer, list] of runlessRecords([...input])) {
    const g: GatewayWithoutRun = {
      writer,
      pid: null,
      server: null,
      startedAt: list[0]!.header.time,
      endedAt: null,
      endReason: null,
      lastExit: null,
      epochs: [],
    };
    for (const { header, event: e } of list) {
      if (typeof header.pid === "number") g.pid ??= header.pid;
      g.server ??= serverOf(e);
      for (const epoch of [e.epoch, e.newEpoch])
        if (typeof epoch === "string" && !g.epochs.includes(epoch)) g.epochs.push(epoch);
      // Only a shutdown ends the gateway: after a crash it respawns, or (under a file watcher)
      // pauses until the server's files change, still running with no record to say so.
      if (e.type === "server_exited" && e.why === "shutdown") {
        g.endedAt = header.time;
        g.endReason = "shutdown";
        g.lastExit = null;
      } else if (e.type === "server_exited") {
        g.lastExit = { at: header.time, why: str(e.why) };
      } else if (e.type === "server_started" || e.type === "server_replaced") {
        g.endedAt = null;
        g.endReason = null;
        g.lastExit = null;
      }
    }
    out.push(g);
  }
  return out;
}

/**
 * Each agent run. Records of a gateway that had none are not a run (gatewaysWithoutRunView
 * lists them): a run begins at the client's first request, so such a gateway would otherwise
 * show as a run with no start that never ends.
 */
export function sessionsView(
  input: Iterable<ViewInput>,
  /** the run's end as the store's row says, for a run the log holds no end of (endInStoreOnly) */
  storedEnd: (run: string) => StoredEnd | null = () => null,
): SessionView[] {
  const records = [...input];
  const attributed = runAttribution(records);
  const runless = runlessRecords(records);
  const runOf = (r: ViewInput): string | null =>
    attributed(r) ?? (runless.has(r.header.writer) ? null : r.header.writer);
  const runs = new Map<string, SessionView>();
  const session = (run: string): SessionView => {
    let s = runs.get(run);
    if (!s) {
      s = {
        run,
        server: null,
        startedAt: null,
        endedAt: null,
        endReason: null,
        agent: null,
        epochs: [],
        revisions: [],
        grants: [],
        approvals: { requested: 0, granted: 0, denied: 0, cancelled: 0, expired: 0 },
        calls: 0,
        callsAfterEnd: 0,
        endInStoreOnly: null,
        refused: 0,
        counts: callCounts([]),
      };
      runs.set(run, s);
    }
    return s;
  };
  /**
   * each run's first run_ended, which is its end: a run has one, or two when another process
   * recorded its end (gateway_gone) while its gateway still served it, which then records its
   * own as it ends, unable to tell that end from an edit of its row (docs/audit-format.md)
   */
  const endSeq = new Map<string, number>();
  const sawEpoch = (s: SessionView, epoch: unknown) => {
    if (typeof epoch === "string" && !s.epochs.includes(epoch)) s.epochs.push(epoch);
  };

  for (const r of records) {
    const { header, event: e } = r;
    if (NOT_ABOUT_A_RUN.has(e.type) && !str(e.run)) continue;
    const run = runOf(r);
    if (run === null) continue;
    const at = header.time;
    const s = session(run);
    s.server ??= serverOf(e);
    for (const epoch of [e.epoch, e.newEpoch, e.requestEpoch, e.currentEpoch]) sawEpoch(s, epoch);
    switch (e.type) {
      case "run_started":
        s.startedAt = at;
        s.server = serverOf(e) ?? s.server;
        s.agent = e.agent ?? null;
        break;
      case "run_ended":
        if (endSeq.has(run)) break;
        s.endedAt = at;
        s.endReason = str(e.reason);
        endSeq.set(run, r.seq);
        break;
      case "catalog_served":
        s.revisions.push({ server: serverOf(e), revision: rev(e.revision), epoch: str(e.epoch), at });
        break;
      case "approval_requested":
        s.approvals.requested++;
        break;
      case "approval_granted":
        s.approvals.granted++;
        s.grants.push({
          grant: str(e.grant),
          epoch: str(e.epoch),
          tools: e.tools ?? e.toolScope ?? (typeof e.tool === "string" ? [e.tool] : null),
          credentialScope: e.credentialScope ?? null,
          mode: str(e.mode),
          at,
        });
        break;
      case "approval_denied":
        if (e.outcome === "cancelled") s.approvals.cancelled++;
        else s.approvals.denied++;
        break;
      case "approval_expired":
        s.approvals.expired++;
        break;
    }
  }
  // Calls are counted from the activity view itself: one definition for both views.
  const byRun = new Map<string, ActivityEntry[]>();
  const { entries, lastSeq } = activityEntries(records);
  for (const a of entries) {
    const s = session(a.run);
    const list = byRun.get(a.run) ?? [];
    list.push(a);
    byRun.set(a.run, list);
    const end = endSeq.get(a.run);
    if (end !== undefined && (lastSeq.get(a) ?? a.seq) > end) s.callsAfterEnd++;
  }
  for (const s of runs.values()) {
    if (!endSeq.has(s.run)) s.endInStoreOnly = storedEnd(s.run);
    s.counts = callCounts(byRun.get(s.run) ?? []);
    s.calls = s.counts.calls;
    s.refused = s.counts.refused + s.counts.invalid;
  }
  return [...runs.values()];
}

export function activityView(input: Iterable<ViewInput>): ActivityEntry[] {
  return activityEntries([...input]).entries;
}

/**
 * activityView's entries, and the seq of the last record its run's gateway wrote of each (its
 * start, or what followed; not a close of the call by another process as gone).
 */
function activityEntries(records: ViewInput[]): {
  entries: ActivityEntry[];
  lastSeq: Map<ActivityEntry, number>;
} {
  const runOf = runAttribution(records);
  const out: ActivityEntry[] = [];
  const lastSeq = new Map<ActivityEntry, number>();
  // Open calls by run and id text (the latest call under it), and by run and call key. A record
  // with a call key is joined by it alone: over HTTP two calls of one run may carry the same id at
  // once. Records written before call keys are joined by the id text.
  const open = new Map<string, ActivityEntry>();
  const openByKey = new Map<string, ActivityEntry>();
  /** calls by run and id text whose start carries no call key (written before call keys) */
  const openUnkeyed = new Map<string, ActivityEntry>();
  const callKey = (run: string, e: AuditEvent): string | null => {
    const call = callText(e);
    return call === null ? null : `${run}\u0000${call}`;
  };
  const keyed = (run: string, e: AuditEvent): string | null =>
    typeof e.callKey === "number" ? `${run}\u0000${e.callKey}` : null;
  /** A call starts (tool_called) or is refused before it starts (authorization_denied). */
  const start = (r: ViewInput, run: string, decision: string, outcome: string): ActivityEntry => {
    const e = r.event;
    const a: ActivityEntry = {
      seq: r.seq,
      at: r.header.time,
      run,
      call: callText(e),
      server: serverOf(e),
      tool: str(e.tool),
      epoch: str(e.epoch),
      revision: rev(e.revision),
      grant: str(e.grant),
      decision,
      outcome,
      argumentsDigest: str(e.argumentsDigest) ?? str(e.effectiveArgumentsDigest),
      credentials: [],
      endedAt: null,
      interruption: null,
      ends: e.type === "authorization_denied" ? 1 : 0,
    };
    out.push(a);
    lastSeq.set(a, r.seq);
    const k = callKey(run, e);
    if (k !== null) open.set(k, a); // a client may reuse a request id once its call is over
    const kk = keyed(run, e);
    if (kk !== null) openByKey.set(kk, a);
    else if (k !== null) openUnkeyed.set(k, a);
    return a;
  };
  /** What follows a call (result, interruption, credentials): the open call with its key, else that id. */
  const follow = (r: ViewInput, run: string): ActivityEntry => {
    const kk = keyed(run, r.event);
    const k = callKey(run, r.event);
    // An end with a call key whose start has none: a call an older gateway opened (its start
    // written before call keys), closed by a newer one, whose key is then the row's id: joined by
    // the id text, to a start without a key only (a keyed start has its own end).
    const a =
      kk !== null
        ? (openByKey.get(kk) ?? (k !== null ? openUnkeyed.get(k) : undefined))
        : k !== null
          ? open.get(k)
          : undefined;
    // an unkeyed call takes one end: a later end under its id text is another call's
    if (a !== undefined && k !== null && openUnkeyed.get(k) === a) openUnkeyed.delete(k);
    if (a === undefined) return start(r, run, "unknown", "pending");
    // its own gateway's records only: a run ended as gone by one process (a lister) and its call
    // closed later by another (the next gateway) had no call after its end
    if (!closesAnotherGateway(r.event)) lastSeq.set(a, r.seq);
    return a;
  };

  /** One more end of `a` (a second one is shown: see `ends`). */
  const countEnd = (a: ActivityEntry) => {
    a.ends++;
  };

  for (const r of records) {
    const { header, event: e } = r;
    // a call whose writer names no run (records older than runs): listed under its writer
    const run = runOf(r) ?? header.writer;
    switch (e.type) {
      case "tool_called":
        // the scopes the call uses (its tool's, src/vault/toolScopes.ts), named with its intent
        start(r, run, str(e.decision) ?? "allowed", "pending").credentials.push(
          ...strings(e.credentialScope),
        );
        break;
      case "request_forwarded":
        // a guarded read (resources/read …): listed like a call, under its method
        start(r, run, "allowed", "pending").tool ??= str(e.method);
        break;
      case "authorization_denied": {
        const a = start(r, run, str(e.reason) ?? str(e.error) ?? "denied", "refused");
        a.endedAt = header.time;
        break;
      }
      case "tool_result": {
        const a = follow(r, run);
        countEnd(a);
        a.outcome = str(e.outcome) ?? (e.isError === true ? "error" : "ok");
        a.endedAt = header.time;
        break;
      }
      case "call_interrupted": {
        const a = follow(r, run);
        countEnd(a);
        a.interruption = str(e.reason);
        a.outcome =
          e.outcome === "not_run"
            ? "not-run"
            : e.outcome !== "not_forwarded"
              ? "interrupted"
              : e.reason === "redecided"
                ? "superseded"
                : e.reason === "server_unavailable" || e.reason === "listen_refused"
                  ? "refused"
                  : e.reason === "connection_ended" || e.reason === "gateway_error"
                    ? "not-run"
                    : "cancelled";
        // A read recorded, then not sent because no server process was alive to take it: the
        // client was answered server_unavailable, as a call refused for that reason before its
        // intent (authorization_denied) is shown. It was listed as "cancelled" (by the client),
        // which it never was.
        if (e.outcome === "not_forwarded" && e.reason === "server_unavailable")
          a.decision = "server_unavailable";
        a.endedAt = header.time;
        break;
      }
      case "credential_injected": {
        const a = follow(r, run);
        for (const s of strings(e.scope ?? e.credentialScope))
          if (!a.credentials.includes(s)) a.credentials.push(s);
        break;
      }
    }
  }
  return { entries: out, lastSeq };
}
