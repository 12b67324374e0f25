import { describe, expect, it } from "vitest";
import { reviewDigest } from "../../src/approval/decision.js";
import { getGrant, revokeGrant } from "../../src/approval/grants.js";
import { DecisionError, decideRequest, getRequest } from "../../src/approval/requests.js";
import { endRun } from "../../src/approval/runs.js";
import { REFUSAL_CODES } from "../../src/guard/refusals.js";
import type { Store } from "../../src/store/db.js";
import { waitFor } from "../helpers/files.js";
import {
  callOf,
  chainEvents,
  decideNext,
  makeAuthorizer,
  otherConnection,
  pendingOf,
  publishPreview,
  publishPreviewCosmetic,
  publishPreviewExpanded,
  publishPreviewNarrowed,
  readTool,
  requestCount,
  sessionGranted,
  signer,
  testRun,
  throughStep8,
  twoConnectionsPerTest,
} from "./helpers.js";

const A = "01JQ7R4S4S0QJ7GZP1S2AAAAAA";
const B = "01JQ7R9KQ6K2Y8W4JH0MBBBBBB";

type Got = { grant: string | null } | { error: { code: number; message: string; data?: unknown } };

function errorOf(got: Got) {
  expect("error" in got).toBe(true);
  const e = (got as { error: { code: number; data: Record<string, unknown> } }).error;
  return e;
}

let dir: string;
let db: Store;
let other: Store;
twoConnectionsPerTest("portcullis-approval-", (s) => {
  ({ dir, db, other } = s);
});

describe("session grants", () => {
  it("cover the next call of the same run and epoch without asking again", async () => {
    const run = testRun(db);
    const { auth, rec } = makeAuthorizer(db, run);
    const call = callOf(publishPreview, A);
    expect(auth.stale(call)).toBeNull();
    const first = auth.obtain(call);
    const { request, grant } = await decideNext(other, run, { approve: true, for: "session" });
    expect(await first).toEqual({ grant: grant!.grant });
    expect(grant).toMatchObject({
      agentRun: run.run,
      serverLabel: "inventory-local",
      executionEpoch: A,
      toolScope: [{ name: "publish_preview", fingerprint: call.fingerprint }],
      credentialScope: [],
      mode: "session",
      expiresWhen: "agent-run-ends",
    });

    expect(auth.stale(call)).toBeNull();
    expect(await auth.obtain(callOf(publishPreview, A, { effective: { branch: "other" } }))).toEqual({
      grant: grant!.grant,
    });
    expect(requestCount(db, run)).toBe(1);
    // the approval is in the chain once, written by its decider with the decision, not by the gateway
    expect(rec.events.map((e) => e.type)).toEqual(["approval_requested"]);
    expect((await chainEvents(dir)).filter((e) => e.type === "approval_granted")).toEqual([
      expect.objectContaining({ approvalRequest: request.request, grant: grant!.grant, mode: "session" }),
    ]);
    expect(rec.lines.filter((l) => l.includes(`portcullis approve ${request.request}`))).toHaveLength(1);
    expect(rec.lines[0]).toMatch(new RegExp(`run in a terminal: portcullis approve ${request.request}$`));
    expect(rec.lines[1]).toBe(`or to deny ${request.request}, run: portcullis deny ${request.request}`);
  });

  it("of run X do not cover run Y", async () => {
    const x = testRun(db);
    const y = testRun(db);
    const ax = makeAuthorizer(db, x).auth;
    const ay = makeAuthorizer(db, y).auth;
    const call = callOf(publishPreview, A);
    const px = ax.obtain(call);
    const { grant } = await decideNext(other, x, { approve: true, for: "session" });
    expect(await px).toEqual({ grant: grant!.grant });

    let settled = false;
    const py = ay.obtain(call).then((r) => {
      settled = true;
      return r;
    });
    const asked = await pendingOf(other, y);
    expect(asked.agentRun).toBe(y.run);
    expect(settled).toBe(false);
    decideRequest(other, asked.request, { approve: false, reason: "other run" }, "test", signer());
    expect(errorOf(await py).code).toBe(REFUSAL_CODES.approval_denied);
    // and X's grant is not stale for Y either: Y never held one
    expect(ay.stale(callOf(publishPreview, B))).toBeNull();
  });

  it("stop covering after an epoch change: stale with both epochs, reported once, then a new approval", async () => {
    const run = testRun(db);
    const { auth } = makeAuthorizer(db, run);
    const pa = auth.obtain(callOf(publishPreview, A));
    const { grant: ga } = await decideNext(other, run, { approve: true, for: "session" });
    expect(await pa).toEqual({ grant: ga!.grant });

    const callB = callOf(publishPreview, B);
    // Even asked directly (without step 2 first), the epoch-A grant does not cover an epoch-B call.
    const direct = auth.obtain(callB);
    const asked = await pendingOf(other, run);
    expect(asked.executionEpoch).toBe(B);
    decideRequest(other, asked.request, { approve: false }, "test", signer());
    expect(errorOf(await direct).code).toBe(REFUSAL_CODES.approval_denied);

    const stale = auth.stale(callB);
    expect(stale).not.toBeNull();
    expect(stale!.code).toBe(REFUSAL_CODES.authorization_stale);
    expect(stale!.data).toEqual({
      error: "authorization_stale",
      reason: "server execution epoch changed",
      retry: "refresh tool metadata and request authorization",
      approvedEpoch: A,
      currentEpoch: B,
      changedTools: ["publish_preview"],
    });
    expect(getGrant(db, ga!.grant)!.endedAt).not.toBeNull();

    // Reported once: the retry goes on to ask a human for the new epoch.
    expect(auth.stale(callB)).toBeNull();
    const pb = auth.obtain(callB);
    const req = await pendingOf(other, run);
    expect(req.executionEpoch).toBe(B);
    const { grant: gb } = decideRequest(
      other,
      req.request,
      { approve: true, for: "session" },
      "test",
      signer(),
    );
    expect(await pb).toEqual({ grant: gb!.grant });
    expect(gb!.executionEpoch).toBe(B);
    expect(auth.stale(callB)).toBeNull();
    expect(await auth.obtain(callB)).toEqual({ grant: gb!.grant });
  });

  it("name in changedTools the tools whose approval ended: all the run's after an epoch change, the called one after an expansion", async () => {
    // The documented meaning (docs/refusals.md): changedTools lists the tools whose approval the
    // refusal ended, not the tools whose definitions changed.
    const twoGrants = async () => {
      const { run, auth, grant } = await sessionGranted(db, other, A);
      const lookup = auth.obtain(callOf(readTool, A));
      const { grant: lookupGrant } = await decideNext(other, run, { approve: true, for: "session" });
      expect(await lookup).toEqual({ grant: lookupGrant!.grant });
      return { auth, publish: grant.grant, lookup: lookupGrant!.grant };
    };

    // new code behind both: a call of the lookup tool, whose definition did not change, names both
    const epochChange = await twoGrants();
    expect(epochChange.auth.stale(callOf(readTool, B))?.data).toMatchObject({
      reason: "server execution epoch changed",
      approvedEpoch: A,
      currentEpoch: B,
      changedTools: ["inventory_lookup", "publish_preview"],
    });
    expect(getGrant(db, epochChange.publish)!.endedAt).not.toBeNull();
    expect(getGrant(db, epochChange.lookup)!.endedAt).not.toBeNull();

    // an expanding change of one tool ends that tool's approval only
    const expansion = await twoGrants();
    const expanded = callOf(publishPreviewExpanded, A, {
      revision: 2,
      effective: { branch: "main", target: "x" },
    });
    expect(expansion.auth.stale(expanded)?.data).toMatchObject({
      reason: "tool authority expanded",
      changedTools: ["publish_preview"],
    });
    expect(getGrant(db, expansion.publish)!.endedAt).not.toBeNull();
    expect(getGrant(db, expansion.lookup)!.endedAt).toBeNull();
  });

  it("survive a cosmetic or narrowing change of the tool; an expanding change makes them stale", async () => {
    const { run, auth, grant } = await sessionGranted(db, other, A);

    for (const changed of [publishPreviewCosmetic, publishPreviewNarrowed]) {
      const call = callOf(changed, A, { revision: 2 });
      expect(call.fingerprint).not.toBe(grant!.toolScope[0]!.fingerprint);
      expect(auth.stale(call)).toBeNull();
      expect(await auth.obtain(call)).toEqual({ grant: grant!.grant });
    }
    expect(requestCount(db, run)).toBe(1);

    const expanded = callOf(publishPreviewExpanded, A, {
      revision: 3,
      effective: { branch: "main", target: "preview" },
    });
    const stale = auth.stale(expanded);
    expect(stale?.code).toBe(REFUSAL_CODES.authorization_stale);
    expect(stale?.data).toMatchObject({
      reason: "tool authority expanded",
      approvedEpoch: A,
      currentEpoch: A,
      changedTools: ["publish_preview"],
    });
    expect(stale?.message).toMatch(/expands its authority/);

    // The next call asks a human, showing the change against what was approved.
    expect(auth.stale(expanded)).toBeNull();
    const pe = auth.obtain(expanded);
    const req = await pendingOf(other, run);
    expect(req.review.tool.sinceLastGrant).toMatchObject({ grant: grant!.grant, classification: "expands" });
    expect(req.review.tool.sinceLastGrant!.rendered).toContain("target");
    expect(req.review.arguments).toContainEqual({
      name: "target",
      value: "preview",
      note: "schema default (given or filled in)",
    });
    decideRequest(other, req.request, { approve: false }, "test", signer());
    expect(errorOf(await pe).code).toBe(REFUSAL_CODES.approval_denied);
  });

  it("parallel calls waiting for the same tool are all covered by the one session approval", async () => {
    const run = testRun(db);
    const { auth } = makeAuthorizer(db, run);
    const call = callOf(publishPreview, A);
    const p1 = auth.obtain(call);
    const p2 = auth.obtain(callOf(publishPreview, A, { effective: { branch: "dev" } }));
    await waitFor(() => requestCount(db, run) === 2, 5000, "two requests");
    const { grant } = await decideNext(other, run, { approve: true, for: "session" });
    expect(await p1).toEqual({ grant: grant!.grant });
    expect(await p2).toEqual({ grant: grant!.grant });
    const states = other
      .prepare("SELECT state FROM approval_requests WHERE agent_run = ? ORDER BY created_at, request")
      .all(run.run) as { state: string }[];
    expect(states.map((r) => r.state).sort()).toEqual(["approved", "cancelled"]);
  });

  it("stop covering on the next call once revoked", async () => {
    const { run, auth, call, grant } = await sessionGranted(db, other, A);
    expect(await auth.obtain(call)).toEqual({ grant: grant!.grant });

    revokeGrant(other, grant!.grant, "test");
    // Step 7 answers from its last read; step 8 reads the grant again with the intent record
    // and finds it revoked: the decision is made again, and a human is asked.
    const next = callOf(publishPreview, A);
    expect(await auth.obtain(next)).toEqual({ grant: grant!.grant });
    next.grant = grant!.grant;
    expect(auth.condition(next)?.()).toBe(false);
    const again = throughStep8(auth, () => callOf(publishPreview, A));
    const req = await pendingOf(other, run);
    expect(requestCount(db, run)).toBe(2);
    decideRequest(other, req.request, { approve: false, reason: "revoked" }, "test", signer());
    expect(errorOf(await again).code).toBe(REFUSAL_CODES.approval_denied);
    // a revoked grant of an older epoch is not reported stale either: it was withdrawn
    expect(auth.stale(callOf(publishPreview, B))).toBeNull();
  });

  it("end with the run, and the run's pending requests are cancelled", async () => {
    const { run, auth, grant } = await sessionGranted(db, other, A);
    const waiting = auth.obtain(callOf(readTool, A, { effective: {} }));
    const req = await pendingOf(other, run);
    endRun(other, run);
    expect(errorOf(await waiting).code).toBe(REFUSAL_CODES.authorization_required);
    expect(getRequest(db, req.request)!.state).toBe("cancelled");
    expect(getGrant(db, grant!.grant)).toMatchObject({ endedReason: "agent run ended" });
    expect(() =>
      decideRequest(other, req.request, { approve: true, for: "session" }, "test", signer()),
    ).toThrow(DecisionError);
  });
});

describe("per-call approvals", () => {
  it("are never remembered, and cannot be turned into a session grant", async () => {
    const run = testRun(db);
    const { auth } = makeAuthorizer(db, run, {
      approval: { default: "session", tools: { publish_preview: "per-call" } },
    });
    const call = callOf(publishPreview, A);

    const p1 = auth.obtain(call);
    const r1 = await pendingOf(other, run);
    expect(r1.mode).toBe("per-call");
    expect(() =>
      decideRequest(other, r1.request, { approve: true, for: "session" }, "test", signer()),
    ).toThrow(/needs a human decision for every call: it can be approved for this one call only$/);
    const { grant: g1 } = decideRequest(other, r1.request, { approve: true, for: "call" }, "test", signer());
    expect(g1).toMatchObject({ mode: "per-call", expiresWhen: "this-call" });
    expect(await p1).toEqual({ grant: g1!.grant });
    expect(getGrant(db, g1!.grant)!.endedReason).toMatch(/single use/);

    let settled = false;
    const p2 = auth.obtain(call).then((r) => {
      settled = true;
      return r;
    });
    const r2 = await pendingOf(other, run);
    expect(r2.request).not.toBe(r1.request);
    expect(settled).toBe(false);
    const { grant: g2 } = decideRequest(other, r2.request, { approve: true, for: "call" }, "test", signer());
    expect(await p2).toEqual({ grant: g2!.grant });
    expect(g2!.grant).not.toBe(g1!.grant);
    // a single-use grant never makes a later epoch "stale"
    expect(auth.stale(callOf(publishPreview, B))).toBeNull();
  });

  it("a session-mode tool approved --for call once is asked again next time", async () => {
    const run = testRun(db);
    const { auth } = makeAuthorizer(db, run);
    const call = callOf(publishPreview, A);
    const p1 = auth.obtain(call);
    const { grant } = await decideNext(other, run, { approve: true, for: "call" });
    expect(await p1).toEqual({ grant: grant!.grant });
    const p2 = auth.obtain(call);
    const r2 = await pendingOf(other, run);
    expect(requestCount(db, run)).toBe(2);
    decideRequest(other, r2.request, { approve: false }, "test", signer());
    expect(errorOf(await p2).code).toBe(REFUSAL_CODES.approval_denied);
  });
});

describe("waiting for a human", () => {
  it("the hold ends with approval_timeout; the request stays pending, then expires and is recorded", async () => {
    const run = testRun(db);
    const { auth, rec } = makeAuthorizer(db, run, { timeoutMs: 100, requestTtlMs: 700 });
    const e = errorOf(await auth.obtain(callOf(publishPreview, A)));
    expect(e.code).toBe(REFUSAL_CODES.approval_timeout);
    const id = e.data.approvalRequest as string;
    expect(e.data.pendingUntil).toBe(getRequest(db, id)!.expiresAt);
    expect(getRequest(db, id)!.state).toBe("pending");
    await waitFor(() => getRequest(db, id)!.state === "expired", 10_000, "the request to expire");
    expect(() => decideRequest(other, id, { approve: true, for: "session" }, "test", signer())).toThrow(
      /no longer pending/,
    );
    expect(rec.events.at(-1)).toMatchObject({ type: "approval_expired", approvalRequest: id });
  });

  it("a one-call approval given after the call gave up is not taken by a retry after the request's expiry", async () => {
    const run = testRun(db);
    const { auth } = makeAuthorizer(db, run, { timeoutMs: 100, requestTtlMs: 800 });
    const call = callOf(publishPreview, A);
    const e = errorOf(await auth.obtain(call));
    const id = e.data.approvalRequest as string;
    decideRequest(other, id, { approve: true, for: "call" }, "test", signer());
    const expiresAt = Date.parse(getRequest(db, id)!.expiresAt);
    await waitFor(() => Date.now() > expiresAt, 10_000, "the request's expiry");
    const late = auth.obtain(call);
    await waitFor(() => requestCount(db, run) === 2, 10_000, "a new request");
    decideRequest(other, (await pendingOf(other, run)).request, { approve: false }, "test", signer());
    expect(errorOf(await late).code).toBe(REFUSAL_CODES.approval_denied);
  });

  it("a denial is approval_denied with the human's reason", async () => {
    const run = testRun(db);
    const { auth, rec } = makeAuthorizer(db, run);
    const p = auth.obtain(callOf(publishPreview, A));
    const { request } = await decideNext(other, run, { approve: false, reason: "not on a Friday" });
    const e = errorOf(await p);
    expect(e.code).toBe(REFUSAL_CODES.approval_denied);
    expect(e.data).toMatchObject({ approvalRequest: request.request, reason: "denied: not on a Friday" });
    // recorded once, by its decider with the decision; the gateway that told it records nothing
    expect(rec.events.filter((x) => x.type === "approval_denied")).toEqual([]);
    expect((await chainEvents(dir)).filter((x) => x.type === "approval_denied")).toEqual([
      expect.objectContaining({
        approvalRequest: request.request,
        outcome: "denied",
        reason: "not on a Friday",
      }),
    ]);
    expect(requestCount(db, run)).toBe(1);
  });

  it("a cancelled call leaves its request pending; approved meanwhile, the retry takes the grant once", async () => {
    const run = testRun(db);
    const { auth } = makeAuthorizer(db, run);
    const ac = new AbortController();
    const call = callOf(publishPreview, A);
    const p = auth.obtain(call, { signal: ac.signal });
    const req = await pendingOf(other, run);
    ac.abort();
    expect(errorOf(await p).code).toBe(REFUSAL_CODES.authorization_required);
    expect(getRequest(db, req.request)!.state).toBe("pending");
    const { grant } = decideRequest(other, req.request, { approve: true, for: "call" }, "test", signer());
    expect(await auth.obtain(call)).toEqual({ grant: grant!.grant });
    expect(requestCount(db, run)).toBe(1);
    // consumed: the same call again is a new request
    const again = auth.obtain(call);
    await waitFor(() => requestCount(db, run) === 2, 10_000, "a second request");
    const r2 = await pendingOf(other, run);
    decideRequest(other, r2.request, { approve: false }, "test", signer());
    expect(errorOf(await again).code).toBe(REFUSAL_CODES.approval_denied);
  });

  it("a wait cut short because the connection ends: told so while undecided, a denial told as one, an approval as before", async () => {
    // (the poll is far off: the abort, with the connection's reason, is what wakes the wait)
    const run = testRun(db);
    const { auth } = makeAuthorizer(db, run, { pollMs: 60_000 });
    const cutShort = async (decide: ((request: string) => void) | null) => {
      const ac = new AbortController();
      const p = auth.obtain(callOf(publishPreview, A), { signal: ac.signal });
      const req = await pendingOf(other, run);
      decide?.(req.request);
      ac.abort("the connection ends");
      return { error: errorOf(await p), request: req.request };
    };
    const undecided = await cutShort(null);
    expect(undecided.error.code).toBe(REFUSAL_CODES.authorization_required);
    expect(undecided.error.data).toMatchObject({
      reason: "the connection ends: its approval request closes with the agent run",
      retry: "reconnect, then retry: the call asks a human again",
      approvalRequest: undecided.request,
    });
    const denied = await cutShort((id) => decideRequest(other, id, { approve: false }, "test", signer()));
    expect(denied.error.code).toBe(REFUSAL_CODES.approval_denied);
    const approved = await cutShort((id) =>
      decideRequest(other, id, { approve: true, for: "call" }, "test", signer()),
    );
    expect(approved.error.code).toBe(REFUSAL_CODES.authorization_required);
    expect(approved.error.data).toMatchObject({ reason: "no grant covers this call" });
  });

  it("keeps the client informed while it waits", async () => {
    const run = testRun(db);
    const { auth } = makeAuthorizer(db, run, { progressEveryMs: 40 });
    const messages: string[] = [];
    const p = auth.obtain(callOf(publishPreview, A), { progress: (m) => messages.push(m) });
    const req = await pendingOf(other, run);
    // told every 40 ms while it waits: three such messages waited for (a fixed 250 ms held fewer
    // when the process stalled in the middle of it, its polls coming late together)
    await waitFor(() => messages.length >= 3, 10_000, "three progress messages");
    decideRequest(other, req.request, { approve: true, for: "session" }, "test", signer());
    await p;
    expect(messages.length).toBeGreaterThanOrEqual(3);
    expect(new Set(messages)).toEqual(new Set([`waiting for human approval of ${req.request}`]));
  });

  it("two runs on one store file wait at the same time; a third connection decides each", async () => {
    const second = otherConnection(dir);
    try {
      const x = testRun(db);
      const y = testRun(second);
      const ax = makeAuthorizer(db, x).auth;
      const ay = makeAuthorizer(second, y).auth;
      const px = ax.obtain(callOf(publishPreview, A));
      const py = ay.obtain(callOf(publishPreview, A));
      const rx = await pendingOf(other, x);
      const ry = await pendingOf(other, y);
      const { grant } = decideRequest(
        other,
        ry.request,
        { approve: true, for: "session" },
        "third",
        signer(),
      );
      decideRequest(other, rx.request, { approve: false, reason: "x no" }, "third", signer());
      expect(await py).toEqual({ grant: grant!.grant });
      expect(errorOf(await px).data).toMatchObject({ error: "approval_denied", approvalRequest: rx.request });
      expect(grant!.agentRun).toBe(y.run);
    } finally {
      second.close();
    }
  });
});

describe("modes and scopes", () => {
  it("mode none never asks and is never stale; other tools still are", async () => {
    const run = testRun(db);
    const { auth, rec } = makeAuthorizer(db, run, {
      approval: { default: "session", tools: { inventory_lookup: "none" } },
    });
    expect(await auth.obtain(callOf(readTool, A, { effective: {} }))).toEqual({ grant: null });
    expect(requestCount(db, run)).toBe(0);
    const p = auth.obtain(callOf(publishPreview, A));
    await decideNext(other, run, { approve: true, for: "session" });
    await p;
    expect(auth.stale(callOf(readTool, B, { effective: {} }))).toBeNull();
    expect(auth.stale(callOf(publishPreview, B))?.code).toBe(REFUSAL_CODES.authorization_stale);
    expect(rec.events.filter((e) => e.tool === "inventory_lookup")).toEqual([]);
  });

  it("a grant names the server's credential scopes; one without a needed scope does not cover", async () => {
    const run = testRun(db);
    const { auth } = makeAuthorizer(db, run, { credentials: { INVENTORY_API_KEY: "inventory-api-staging" } });
    const call = callOf(publishPreview, A);
    const p = auth.obtain(call);
    const req = await pendingOf(other, run);
    expect(req.credentialScope).toEqual(["inventory-api-staging"]);
    expect(req.review.credentialScope).toEqual(["inventory-api-staging"]);
    const { grant } = decideRequest(other, req.request, { approve: true, for: "session" }, "test", signer());
    expect(grant!.credentialScope).toEqual(["inventory-api-staging"]);
    expect(await p).toEqual({ grant: grant!.grant });

    const wider = makeAuthorizer(db, run, {
      credentials: { INVENTORY_API_KEY: "inventory-api-staging", DEPLOY_TOKEN: "deploy-prod" },
    }).auth;
    const pw = wider.obtain(call);
    const r2 = await pendingOf(other, run);
    expect(r2.credentialScope).toEqual(["deploy-prod", "inventory-api-staging"]);
    decideRequest(other, r2.request, { approve: false }, "test", signer());
    expect(errorOf(await pw).code).toBe(REFUSAL_CODES.approval_denied);
  });

  it("step 6: a server with credentials and no vault holder is locked; without credentials it never asks", async () => {
    const run = testRun(db);
    const { auth } = makeAuthorizer(db, run, { credentials: { K: "scope" } });
    expect((await auth.vault(callOf(publishPreview, A)))?.code).toBe(REFUSAL_CODES.vault_locked);
    const { auth: plain } = makeAuthorizer(db, testRun(db), { credentials: {} });
    expect(await plain.vault(callOf(publishPreview, A))).toBeNull();
  });
});

describe("the review the human was shown", () => {
  it("an approval made on another review than the stored one is refused before it is signed; on the stored one it covers", async () => {
    const run = testRun(db);
    const { auth } = makeAuthorizer(db, run);
    const call = callOf(publishPreview, A);
    const got = auth.obtain(call);
    const req = await pendingOf(other, run);
    // The review changed in the store after the human was shown it (or the human saw another).
    const shownElsewhere = reviewDigest({
      ...req.review,
      tool: { ...req.review.tool, name: "something_else" },
    });
    expect(() =>
      decideRequest(
        other,
        req.request,
        { approve: true, for: "session", reviewed: shownElsewhere },
        "t",
        signer(),
      ),
    ).toThrow(DecisionError);
    expect(getRequest(other, req.request)!.state).toBe("pending");
    const { grant } = decideRequest(
      other,
      req.request,
      { approve: true, for: "session", reviewed: reviewDigest(req.review) },
      "t",
      signer(),
    );
    expect(grant).not.toBeNull();
    expect(await got).toEqual({ grant: grant!.grant });
  });
});
