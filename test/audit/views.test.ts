// Sessions and activity, both from the same decrypted log: the rebuild story of the seed
// (call under epoch A, server replaced, stale call refused, new grant, call under epoch B).
import { describe, expect, it } from "vitest";
import {
  type AuditEvent,
  AuditLog,
  activityView,
  argumentsDigest,
  callCounts,
  openRecords,
  sessionsView,
  shownOutcome,
} from "../../src/audit/index.js";
import { auditBody } from "../../src/console/pages.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { PASSPHRASE, stateWithKeyring } from "./helpers.js";

const A = "01JQ7R4S4S0QJ7GZP1S2X3Y4Z5";
const B = "01JQ7R9KQ6K2Y8W4JH0M3N5P7Q";
const RUN = "01JQ7R1ZC2M7W1DXQ8Z2K9V4B6";
const S = "inventory-local";

const story: AuditEvent[] = [
  { type: "server_started", serverLabel: S, epoch: A, reason: "launch" },
  { type: "run_started", run: RUN, serverLabel: S, agent: { pid: 4100, executable: "/usr/bin/claude" } },
  { type: "catalog_served", run: RUN, serverLabel: S, epoch: A, revision: 12 },
  { type: "approval_requested", run: RUN, serverLabel: S, epoch: A, request: "R1" },
  {
    type: "approval_granted",
    run: RUN,
    epoch: A,
    grant: "G1",
    tools: [{ name: "inventory_adjust", fingerprint: "sha256:aa" }],
    credentialScope: ["inventory-api-staging"],
    mode: "session",
  },
  {
    type: "tool_called",
    run: RUN,
    serverLabel: S,
    requestId: 1,
    tool: "inventory_adjust",
    epoch: A,
    revision: 12,
    grant: "G1",
    argumentsDigest: argumentsDigest({ sku: "A-1", revision: "A" }),
  },
  { type: "credential_injected", run: RUN, requestId: 1, scope: "inventory-api-staging" },
  { type: "tool_result", run: RUN, requestId: 1, outcome: "ok" },
  { type: "server_replaced", serverLabel: S, epoch: B, previousEpoch: A, reason: "replaced" },
  {
    type: "authorization_denied",
    run: RUN,
    serverLabel: S,
    tool: "inventory_adjust",
    epoch: B,
    reason: "authorization_stale",
  },
  { type: "catalog_revised", serverLabel: S, epoch: B, revision: 13, previousRevision: 12 },
  { type: "catalog_served", run: RUN, serverLabel: S, epoch: B, revision: 13 },
  // The shape the approval module writes: one tool, its request, the credential scopes.
  {
    type: "approval_granted",
    run: RUN,
    serverLabel: S,
    epoch: B,
    revision: 13,
    tool: "inventory_adjust",
    approvalRequest: "R2",
    credentialScope: [],
    grant: "G2",
    mode: "session",
  },
  {
    type: "tool_called",
    run: RUN,
    serverLabel: S,
    requestId: 1,
    tool: "inventory_adjust",
    epoch: B,
    revision: 13,
    grant: "G2",
  },
  {
    type: "call_interrupted",
    run: RUN,
    requestId: 1,
    requestEpoch: B,
    currentEpoch: "01JQ7RC0000000000000000000",
  },
  {
    type: "tool_called",
    run: RUN,
    serverLabel: S,
    requestId: 2,
    tool: "inventory_lookup",
    epoch: B,
    revision: 13,
    grant: "G2",
  },
  { type: "run_ended", run: RUN, reason: "client closed" },
];

/** A tool_called intent of RUN on S under epoch A at revision 12; `fields` name the call (requestId, tool, …). */
function calledUnderA(fields: Record<string, unknown>): AuditEvent {
  return { type: "tool_called", run: RUN, serverLabel: S, ...fields, epoch: A, revision: 12 };
}

async function opened(events: AuditEvent[][]) {
  const dir = await stateWithKeyring();
  const db = openStore(dir);
  for (const batch of events) AuditLog.open(db, dir).appendMany(batch); // one writer per batch
  const { auditPrivateKey } = await unlockKeyring(dir, PASSPHRASE);
  const out = [...openRecords(db, auditPrivateKey)];
  db.close();
  return out;
}

describe("views", () => {
  it("sessions: the run, both epochs, both revisions, both grants", async () => {
    const [s, ...more] = sessionsView(await opened([story]));
    expect(more).toEqual([]);
    expect(s).toMatchObject({
      run: RUN,
      server: S,
      endReason: "client closed",
      agent: { pid: 4100 },
      approvals: { requested: 1, granted: 2, denied: 0, cancelled: 0, expired: 0 },
      // as activity lists them: three allowed calls and the refused one
      calls: 4,
      refused: 1,
    });
    expect(s!.startedAt).not.toBeNull();
    expect(s!.endedAt).not.toBeNull();
    expect(s!.epochs.slice(0, 2)).toEqual([A, B]);
    expect(s!.revisions.map((r) => [r.revision, r.epoch])).toEqual([
      [12, A],
      [13, B],
    ]);
    expect(s!.grants.map((g) => [g.grant, g.epoch, g.mode, g.tools])).toEqual([
      ["G1", A, "session", [{ name: "inventory_adjust", fingerprint: "sha256:aa" }]],
      ["G2", B, "session", ["inventory_adjust"]],
    ]);
  });

  it("activity: each call with its epoch, revision, grant, decision and outcome", async () => {
    const rows = activityView(await opened([story])).map((a) => ({
      tool: a.tool,
      epoch: a.epoch,
      revision: a.revision,
      grant: a.grant,
      decision: a.decision,
      outcome: a.outcome,
      credentials: a.credentials,
    }));
    expect(rows).toEqual([
      {
        tool: "inventory_adjust",
        epoch: A,
        revision: 12,
        grant: "G1",
        decision: "allowed",
        outcome: "ok",
        credentials: ["inventory-api-staging"],
      },
      {
        tool: "inventory_adjust",
        epoch: B,
        revision: null,
        grant: null,
        decision: "authorization_stale",
        outcome: "refused",
        credentials: [],
      },
      // The client reused request id 1 for a new call: a new row, not the old one.
      {
        tool: "inventory_adjust",
        epoch: B,
        revision: 13,
        grant: "G2",
        decision: "allowed",
        outcome: "interrupted",
        credentials: [],
      },
      {
        tool: "inventory_lookup",
        epoch: B,
        revision: 13,
        grant: "G2",
        decision: "allowed",
        outcome: "pending",
        credentials: [],
      },
    ]);
  });

  it("attributes events without a run to the run their writer serves, and keeps writers apart", async () => {
    const bare = (e: AuditEvent): AuditEvent => {
      const { run: _run, ...rest } = e;
      return rest as AuditEvent;
    };
    // Writer 1 names its run once; writer 2 (another gateway process) never does.
    const one = [story[0]!, story[1]!, ...story.slice(2, 8).map(bare)];
    const two = story.slice(2, 8).map(bare);
    const records = await opened([one, two]);
    const sessions = sessionsView(records);
    expect(sessions).toHaveLength(2);
    expect(sessions[0]).toMatchObject({ run: RUN, calls: 1, epochs: [A] });
    expect(sessions[1]!.run).toBe(records.at(-1)!.header.writer);
    const activity = activityView(records);
    expect(activity.map((a) => [a.run, a.outcome])).toEqual([
      [RUN, "ok"],
      [records.at(-1)!.header.writer, "ok"],
    ]);
  });

  it('the request ids "8" and 8 are two calls: each end joins its own intent', async () => {
    const call = (requestId: string | number, tool: string) => calledUnderA({ requestId, tool });
    const records = await opened([
      [
        { type: "run_started", run: RUN, serverLabel: S },
        call("8", "slow"),
        call(8, "fast"),
        { type: "tool_result", run: RUN, requestId: 8, outcome: "ok" },
        { type: "tool_result", run: RUN, requestId: "8", outcome: "error" },
      ],
    ]);
    const activity = activityView(records);
    expect(activity.map((a) => [a.call, a.tool, a.outcome])).toEqual([
      ['"8"', "slow", "error"],
      ["8", "fast", "ok"],
    ]);
    expect(sessionsView(records)[0]!.counts).toMatchObject({ calls: 2, answered: 2, pending: 0 });
  });

  it("two calls of one run under the same id: each end joins its own intent by its call key", async () => {
    const call = (callKey: number, tool: string) => calledUnderA({ requestId: 7, callKey, tool });
    const records = await opened([
      [
        { type: "run_started", run: RUN, serverLabel: S },
        call(3, "slow"),
        call(4, "fast"),
        { type: "tool_result", run: RUN, requestId: 7, callKey: 4, outcome: "ok" },
        {
          type: "call_interrupted",
          run: RUN,
          requestId: 7,
          callKey: 3,
          reason: "cancelled",
          outcome: "unknown",
        },
        // a record without a call key (written before them) still joins by its id
        { type: "tool_called", run: RUN, serverLabel: S, requestId: 9, tool: "old", epoch: A },
        { type: "tool_result", run: RUN, requestId: 9, outcome: "ok" },
      ],
    ]);
    expect(activityView(records).map((a) => [a.call, a.tool, a.outcome, a.interruption])).toEqual([
      ["7", "slow", "interrupted", "cancelled"],
      ["7", "fast", "ok", null],
      ["9", "old", "ok", null],
    ]);
    expect(sessionsView(records)[0]!.counts).toMatchObject({ calls: 3, answered: 2, pending: 0 });
  });

  it("a call an older gateway opened without a call key, closed by a newer one with its id as the key: one call, interrupted", async () => {
    // Builds before call keys wrote tool_called without one and keyed their open-intents row
    // [run, requestId]; the next gateway closes that row with call_interrupted whose callKey is
    // the row's request id. It was listed twice (one pending for ever, one interrupted) and
    // counted as two calls; a keyed start is never joined so (two calls of one run may share an id).
    const records = await opened([
      [
        { type: "run_started", run: RUN, serverLabel: S },
        { type: "tool_called", run: RUN, serverLabel: S, requestId: 2, tool: "slow_write", epoch: A },
      ],
      [
        {
          type: "call_interrupted",
          run: RUN,
          requestId: 2,
          callKey: 2,
          reason: "gateway_gone",
          outcome: "unknown",
        },
        calledUnderA({ requestId: 5, callKey: 1, tool: "keyed" }),
        {
          type: "call_interrupted",
          run: RUN,
          requestId: 5,
          callKey: 5,
          reason: "gateway_gone",
          outcome: "unknown",
        },
      ],
    ]);
    expect(activityView(records).map((a) => [a.tool, a.outcome, a.interruption])).toEqual([
      ["slow_write", "interrupted", "gateway_gone"],
      ["keyed", "pending", null],
      [null, "interrupted", "gateway_gone"],
    ]);
    expect(sessionsView(records)[0]!.counts).toMatchObject({ calls: 3, pending: 1 });
  });

  it("a call closed as gone by another gateway, then answered by its own: one call with two ends", async () => {
    // A store edited so that a running gateway looked gone (docs/security.md): the next gateway
    // closed its call (gateway_gone), and the running gateway then recorded the call's answer.
    const records = await opened([
      [
        { type: "run_started", run: RUN, serverLabel: S },
        calledUnderA({ requestId: 2, callKey: 3, tool: "slow_write" }),
        calledUnderA({ requestId: 4, callKey: 5, tool: "fast" }),
        { type: "tool_result", run: RUN, requestId: 4, callKey: 5, outcome: "ok" },
        calledUnderA({ requestId: 6, callKey: 7, tool: "open" }),
      ],
      [
        {
          type: "call_interrupted",
          run: RUN,
          requestId: 2,
          callKey: 3,
          reason: "gateway_gone",
          outcome: "unknown",
        },
      ],
      [{ type: "tool_result", run: RUN, requestId: 2, callKey: 3, outcome: "ok" }],
    ]);
    expect(activityView(records).map((a) => [a.tool, a.outcome, a.interruption, a.ends])).toEqual([
      ["slow_write", "ok", "gateway_gone", 2],
      ["fast", "ok", null, 1],
      ["open", "pending", null, 0],
    ]);
    // the audit table and the console's Activity page say it, not the last end alone
    const activity = activityView(records);
    expect(activity.map(shownOutcome)).toEqual(["ok (2 ends)", "ok", "pending"]);
    const page = auditBody(
      {
        verified: { ok: true, records: 9, head: { seq: 9, hash: "h".repeat(64) } },
        opened: { sessions: [], activity, runs: 0, from: 0, span: 0, leftOut: [] },
      },
      "csrf",
    ).text;
    expect(page).toContain("<td>ok (2 ends)</td>");
  });

  it("calls after a run's end: its own gateway's records after another process ended it as gone, not a close by a third", async () => {
    // A lister ended the run as gone (its gateway's rows edited to look so), then the next gateway
    // closed its call in flight: neither is the run's own gateway, so no call is after its end.
    // Then the run's own gateway, still serving it, answered the call: one call after its end.
    const gone = { reason: "gateway_gone", outcome: "unknown" };
    const before = [
      [
        { type: "run_started", run: RUN, serverLabel: S },
        calledUnderA({ requestId: 2, callKey: 3, tool: "slow_write" }),
      ],
      [{ type: "run_ended", run: RUN, serverLabel: S, reason: "gateway_gone" }],
      [
        { type: "call_interrupted", run: RUN, requestId: 2, callKey: 3, ...gone },
        { type: "server_started", serverLabel: S, epoch: B, reason: "launch" },
      ],
    ] as AuditEvent[][];
    const closed = sessionsView(await opened(before));
    expect(closed.map((s) => [s.run, s.endReason, s.calls, s.callsAfterEnd, s.epochs])).toEqual([
      [RUN, "gateway_gone", 1, 0, [A]],
    ]);
    const records = await opened([
      ...before,
      [{ type: "tool_result", run: RUN, requestId: 2, callKey: 3, outcome: "ok" }],
    ]);
    const sessions = sessionsView(records);
    expect(sessions.map((s) => [s.run, s.calls, s.callsAfterEnd])).toEqual([[RUN, 1, 1]]);
    const page = auditBody(
      {
        verified: { ok: true, records: records.length, head: { seq: records.length, hash: "h".repeat(64) } },
        opened: { sessions, activity: activityView(records), runs: 1, from: 0, span: 1, leftOut: [] },
      },
      "csrf",
    ).text;
    expect(page).toContain("<td>1 (1 after its end)</td>");
  });

  it("a run the log holds no end of whose row says it ended: its end is the store's word only, flagged, never its reason", async () => {
    const started = [[{ type: "run_started", run: RUN, serverLabel: S }]] as AuditEvent[][];
    const row = { endedAt: "2026-01-02T03:04:05.000Z", reason: "gateway_gone" };
    const asked: string[] = [];
    const storedEnd = (run: string) => {
      asked.push(run);
      return row;
    };
    const [s] = sessionsView(await opened(started), storedEnd);
    expect([s!.endedAt, s!.endReason, s!.endInStoreOnly]).toEqual([null, null, row]);
    // a run whose end is recorded: the chain says, the row is not asked
    asked.length = 0;
    const ended = sessionsView(
      await opened([...started, [{ type: "run_ended", run: RUN, serverLabel: S }]] as AuditEvent[][]),
      storedEnd,
    );
    expect(ended.map((e) => [e.endedAt !== null, e.endInStoreOnly])).toEqual([[true, null]]);
    expect(asked).toEqual([]);
    // the console's Sessions table says so, not "-"
    const page = auditBody(
      {
        verified: { ok: true, records: 1, head: { seq: 1, hash: "h".repeat(64) } },
        opened: { sessions: [s!], activity: [], runs: 1, from: 0, span: 1, leftOut: [] },
      },
      "csrf",
    ).text;
    expect(page).toContain(
      "in the store only, unrecorded: its row says 2026-01-02T03:04:05.000Z (reason in the row: gateway_gone); the audit log holds no end",
    );
  });

  /**
   * A run whose one intent (`intent`, carrying what names the call) is closed not_forwarded for
   * `reason`, as src/gateway/guardedRequests.ts writes it: what the views show of it, each activity
   * row as [tool, decision, outcome, interruption] and the session's counts.
   */
  const closedUnsent = async (intent: AuditEvent, reason: string) => {
    const { type: _type, revision: _revision, argumentsDigest: _a, paramsDigest: _p, ...names } = intent;
    const records = await opened([
      [
        { type: "run_started", run: RUN, serverLabel: S },
        intent,
        { ...names, type: "call_interrupted", reason, outcome: "not_forwarded" },
      ],
    ]);
    return {
      rows: activityView(records).map((a) => [a.tool, a.decision, a.outcome, a.interruption]),
      counts: sessionsView(records)[0]!.counts,
    };
  };

  it("a read recorded but not sent because no server process was alive is refused server_unavailable, not cancelled", async () => {
    // inFlight.forward found no live process
    const { rows, counts } = await closedUnsent(
      {
        type: "request_forwarded",
        run: RUN,
        serverLabel: S,
        requestId: 1,
        callKey: 1,
        method: "resources/read",
        epoch: A,
        paramsDigest: argumentsDigest({ uri: "file:///a" }),
      },
      "server_unavailable",
    );
    expect(rows).toEqual([["resources/read", "server_unavailable", "refused", "server_unavailable"]]);
    expect(counts).toMatchObject({ calls: 1, refused: 1, cancelled: 0, answered: 0 });
  });

  it("a call not sent because the gateway ended the connection while it was decided is not shown cancelled by the client", async () => {
    // endedMeanwhile: a signal or onChange: disconnect ended the connection before the call was sent
    const { rows, counts } = await closedUnsent(
      calledUnderA({
        requestId: 1,
        callKey: 1,
        tool: "inventory_lookup",
        argumentsDigest: argumentsDigest({ sku: "A-1" }),
      }),
      "connection_ended",
    );
    expect(rows).toEqual([["inventory_lookup", "allowed", "not-run", "connection_ended"]]);
    expect(counts).toMatchObject({ calls: 1, interrupted: 1, cancelled: 0, answered: 0 });
  });

  it("sessions and activity agree: allowed, refused, invalid, cancelled, interrupted, superseded and pending calls", async () => {
    const call = (requestId: number, tool = "inventory_lookup") => calledUnderA({ requestId, tool });
    const end = (requestId: number, reason: string, outcome: string): AuditEvent => ({
      type: "call_interrupted",
      run: RUN,
      serverLabel: S,
      requestId,
      epoch: A,
      reason,
      outcome,
    });
    const records = await opened([
      [
        { type: "run_started", run: RUN, serverLabel: S },
        call(1),
        { type: "tool_result", run: RUN, requestId: 1, outcome: "ok" },
        { type: "authorization_denied", run: RUN, requestId: 2, tool: "x", reason: "catalog_stale" },
        { type: "authorization_denied", run: RUN, requestId: 3, tool: "x", reason: "invalid_arguments" },
        { type: "approval_requested", run: RUN, serverLabel: S, request: "R9" },
        { type: "approval_denied", run: RUN, serverLabel: S, request: "R9", outcome: "cancelled" },
        // nobody decided in time, and one closed with its run: undecided, not denied
        { type: "approval_requested", run: RUN, serverLabel: S, request: "R10" },
        { type: "approval_requested", run: RUN, serverLabel: S, request: "R11" },
        {
          type: "approval_expired",
          run: RUN,
          serverLabel: S,
          approvalRequest: "R10",
          reason: "nobody decided within 10 min",
        },
        {
          type: "approval_expired",
          run: RUN,
          serverLabel: S,
          approvalRequest: "R11",
          reason: "agent run ended",
        },
        call(4),
        end(4, "cancelled", "not_forwarded"),
        call(5),
        end(5, "redecided", "not_forwarded"),
        call(5),
        { type: "tool_result", run: RUN, requestId: 5, outcome: "error" },
        call(6),
      ],
      // a later gateway closes call 6, whose gateway was killed
      [end(6, "gateway_gone", "unknown")],
      [call(7)],
    ]);
    const activity = activityView(records);
    expect(activity.map((a) => [a.call, a.outcome, a.interruption])).toEqual([
      ["1", "ok", null],
      ["2", "refused", null],
      ["3", "refused", null],
      ["4", "cancelled", "cancelled"],
      ["5", "superseded", "redecided"],
      ["5", "error", null],
      ["6", "interrupted", "gateway_gone"],
      ["7", "pending", null],
    ]);
    const [s, ...more] = sessionsView(records);
    expect(more).toEqual([]);
    expect(s!.counts).toEqual(callCounts(activity));
    expect(s!.counts).toEqual({
      calls: 7,
      answered: 2,
      refused: 1,
      invalid: 1,
      cancelled: 1,
      interrupted: 1,
      pending: 1,
    });
    expect(s!.calls).toBe(activity.filter((a) => a.outcome !== "superseded").length);
    // a request the client gave up on is not a human's denial, nor one nobody decided (before,
    // expired requests were counted nowhere: "4 requested, 2 granted, 1 denied, 0 cancelled")
    expect(s!.approvals).toEqual({ requested: 3, granted: 0, denied: 0, cancelled: 1, expired: 2 });
  });
});
