// The decision order of DESIGN.md, as src/guard/guard.ts implements it: deny first, cheapest
// first, and nothing is forwarded unless the intent record was written.
import { describe, expect, it } from "vitest";
import { ArgumentValidator, snapshotOf } from "../../src/catalog/index.js";
import {
  type AuthorizationPort,
  decide,
  type IntentPort,
  precheck,
  type ServerView,
} from "../../src/guard/guard.js";
import { refuse } from "../../src/guard/refusals.js";

const tool = {
  name: "adjust",
  inputSchema: {
    type: "object",
    required: ["sku"],
    properties: { sku: { type: "string" }, n: { type: "integer", default: 1 } },
  },
};
const snap = snapshotOf([tool], 1);
const ready: ServerView = {
  state: "ready",
  epoch: "E2",
  revision: 2,
  snapshot: snap,
  validator: new ArgumentValidator(snap),
};
const stale = refuse.authorizationStale({
  approvedEpoch: "E1",
  currentEpoch: "E2",
  changedTools: ["adjust"],
});

function auth(over: Partial<AuthorizationPort> = {}): AuthorizationPort {
  return {
    stale: () => null,
    vault: async () => null,
    obtain: async () => ({ grant: "G1" }),
    condition: () => undefined,
    ...over,
  };
}
const intents: unknown[] = [];
const intent: IntentPort = {
  intent: async (c) => {
    intents.push(c);
    return true;
  },
};

describe("the guard's decision order", () => {
  it("holds while identity-pending, before anything else", () => {
    const v = precheck(
      { ...ready, state: "identity-pending" },
      { tool: "nope", args: {}, seenRevision: null },
      auth({ stale: () => stale }),
    );
    expect(v.action).toBe("hold");
  });

  it("reports the epoch change first, even when the client is also behind, and says so", () => {
    const v = precheck(
      ready,
      { tool: "adjust", args: {}, seenRevision: 1 },
      auth({ stale: () => ({ ...stale, data: { ...(stale.data as object) } }) }),
    );
    expect(v.action).toBe("refuse");
    if (v.action !== "refuse") return;
    expect(v.error.code).toBe(-32051);
    expect(v.error.data).toMatchObject({
      approvedEpoch: "E1",
      currentEpoch: "E2",
      seenRevision: 1,
      currentRevision: 2,
    });
  });

  it("then catalog_stale, then tool_not_in_catalog, then argument validation", () => {
    const a = precheck(ready, { tool: "nope", args: {}, seenRevision: 1 }, auth());
    expect(a.action === "refuse" && a.error.code).toBe(-32052);
    const b = precheck(ready, { tool: "nope", args: {}, seenRevision: 2 }, auth());
    expect(b.action === "refuse" && b.error.code).toBe(-32055);
    const c = precheck(ready, { tool: "adjust", args: { sku: 3 }, seenRevision: 2 }, auth());
    expect(c.action).toBe("invalid-arguments");
    const d = precheck(ready, { tool: "adjust", args: { sku: "x" }, seenRevision: 2 }, auth());
    expect(d.action).toBe("continue");
    if (d.action === "continue") expect(d.call.effective).toEqual({ sku: "x", n: 1 });
  });

  it("a locked vault and a refused approval are refusals; a grant reaches the intent record", async () => {
    const facts = { tool: "adjust", args: { sku: "x" }, seenRevision: 2 };
    const locked = await decide(
      () => ready,
      facts,
      auth({ vault: async () => refuse.vaultLocked(["s"]) }),
      intent,
    );
    expect(locked.action === "refuse" && locked.error.code).toBe(-32056);
    const denied = await decide(
      () => ready,
      facts,
      auth({ obtain: async () => ({ error: refuse.approvalDenied("R1") }) }),
      intent,
    );
    expect(denied.action === "refuse" && denied.error.code).toBe(-32057);
    intents.length = 0;
    const ok = await decide(() => ready, facts, auth(), intent);
    expect(ok.action).toBe("forward");
    expect(intents).toEqual([expect.objectContaining({ tool: "adjust", epoch: "E2", grant: "G1" })]);
  });

  it("a grant gone when the intent is due makes the decision again; it is never recorded under it", async () => {
    // The intent port holds the condition to its record, as the audit log does (under its lock).
    const recorded: unknown[] = [];
    const conditional: IntentPort = {
      intent: async (c, condition) => {
        if (condition && !condition()) return false;
        recorded.push(c);
        return true;
      },
    };
    let live = false; // G1 was revoked after it was read
    let asked = 0;
    const v = await decide(
      () => ready,
      { tool: "adjust", args: { sku: "x" }, seenRevision: 2 },
      auth({
        obtain: async () => (asked++ === 0 ? { grant: "G1" } : { grant: "G2" }), // then a human gives G2
        condition: (c) => (c.grant === "G1" ? () => live : undefined),
      }),
      conditional,
    );
    expect(asked).toBe(2);
    expect(v.action === "forward" && v.call.grant).toBe("G2");
    expect(recorded).toEqual([expect.objectContaining({ grant: "G2" })]);
    // A condition that never holds: decided three times, then refused, nothing recorded.
    recorded.length = 0;
    live = false;
    const never = await decide(
      () => ready,
      { tool: "adjust", args: { sku: "x" }, seenRevision: 2 },
      auth({ condition: () => () => live }),
      conditional,
    );
    expect(never.action).toBe("refuse");
    if (never.action === "refuse") expect(never.error.data).toMatchObject({ error: "audit_unavailable" });
    expect(recorded).toEqual([]);
  });

  it("an intent record that cannot be written refuses the call (audit_unavailable): nothing is forwarded", async () => {
    const failing: IntentPort = { intent: async () => Promise.reject(new Error("disk full")) };
    const v = await decide(
      () => ready,
      { tool: "adjust", args: { sku: "x" }, seenRevision: 2 },
      null,
      failing,
    );
    expect(v.action).toBe("refuse");
    if (v.action === "refuse")
      expect(v.error.data).toMatchObject({ error: "audit_unavailable", reason: "disk full" });
  });

  it("an epoch change while a human decided sends the call round again (here: held)", async () => {
    let view = ready;
    const v = await decide(
      () => view,
      { tool: "adjust", args: { sku: "x" }, seenRevision: 2 },
      auth({
        obtain: async () => {
          view = { ...ready, state: "identity-pending", epoch: "E3" };
          return { grant: "G1" };
        },
      }),
      intent,
    );
    expect(v.action).toBe("hold");
  });
});
