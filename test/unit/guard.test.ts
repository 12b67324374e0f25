// The decision order of docs/design.md, as src/guard/guard.ts implements it: deny first, cheapest
// first, and nothing is forwarded unless the intent record was written.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { argumentsDigest } from "../../src/audit/events.js";
import { ArgumentValidator, snapshotOf } from "../../src/catalog/index.js";
import {
  type AuthorizationPort,
  decide,
  type IntentPort,
  type ListedCatalog,
  precheck,
  type ServerView,
} from "../../src/guard/guard.js";
import { refuse } from "../../src/guard/refusals.js";
import { nonFiniteAt } from "../../src/util/canonical.js";
import { HUGE, withNumber } from "../helpers/numbers.js";

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
/** What a client last listed: revision n, showing `adjust` as it is now (or with another fingerprint). */
function listed(revision: number, fingerprint = snap.byName.get("adjust")?.fingerprint ?? ""): ListedCatalog {
  return { revision, fingerprints: new Map([["adjust", fingerprint]]) };
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
      { tool: "nope", args: {}, seen: null },
      auth({ stale: () => stale }),
    );
    expect(v.action).toBe("hold");
  });

  it("reports the epoch change first, even when the client is also behind, and says so", () => {
    const v = precheck(
      ready,
      { tool: "adjust", args: {}, seen: listed(1, "sha256:older") },
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

  it("says nothing of revisions when the client's list still shows the called tool as it is (another tool changed)", () => {
    // the client listed revision 1 and the catalog is at 2, but `adjust` is unchanged: the client
    // need not list again to call it (catalog_stale would not refuse it either)
    const v = precheck(
      ready,
      { tool: "adjust", args: {}, seen: listed(1) },
      auth({ stale: () => ({ ...stale, data: { ...(stale.data as object) } }) }),
    );
    expect(v.action === "refuse" && v.error.code).toBe(-32051);
    if (v.action !== "refuse") return;
    expect(v.error.data).not.toHaveProperty("seenRevision");
    expect(v.error.data).not.toHaveProperty("currentRevision");
  });

  it("then catalog_stale, then tool_not_in_catalog, then argument validation", () => {
    const a = precheck(ready, { tool: "adjust", args: {}, seen: listed(1, "sha256:older") }, auth());
    expect(a.action === "refuse" && a.error.code).toBe(-32052);
    if (a.action === "refuse")
      expect(a.error.data).toMatchObject({ tool: "adjust", seenRevision: 1, currentRevision: 2 });
    const b = precheck(ready, { tool: "nope", args: {}, seen: listed(2) }, auth());
    expect(b.action === "refuse" && b.error.code).toBe(-32055);
    const c = precheck(ready, { tool: "adjust", args: { sku: 3 }, seen: listed(2) }, auth());
    expect(c.action).toBe("invalid-arguments");
    const d = precheck(ready, { tool: "adjust", args: { sku: "x" }, seen: listed(2) }, auth());
    expect(d.action).toBe("continue");
    if (d.action === "continue") expect(d.call.effective).toEqual({ sku: "x", n: 1 });
  });

  it("a name the server lists with different definitions is refused tool_not_in_catalog saying so, after an older epoch's approval and before catalog_stale", () => {
    const other = { ...tool, description: "Adjust any stock, anywhere." };
    const both = snapshotOf([tool, other], 1);
    const view: ServerView = { ...ready, snapshot: both, validator: new ArgumentValidator(both) };
    // the client listed `adjust` when it was served: listing again cannot help, so it is told why
    const v = precheck(view, { tool: "adjust", args: { sku: "x" }, seen: listed(1) }, auth());
    expect(v.action === "refuse" && v.error.code).toBe(-32055);
    if (v.action === "refuse") {
      expect(v.reason).toBe("tool_not_in_catalog");
      expect(v.error.message).toContain('lists the tool "adjust" 2 times with 2 different definitions');
      expect(v.error.data).toMatchObject({ tool: "adjust", listed: 2, definitions: 2, currentRevision: 2 });
    }
    const older = precheck(view, { tool: "adjust", args: {}, seen: listed(1) }, auth({ stale: () => stale }));
    expect(older.action === "refuse" && older.error.code).toBe(-32051);
  });

  it("staleness is per tool: a tool unchanged since the client's last list, or a call before any list, is judged on the current catalog", () => {
    const unchanged = precheck(ready, { tool: "adjust", args: { sku: "x" }, seen: listed(1) }, auth());
    expect(unchanged.action).toBe("continue");
    const neverListed = precheck(ready, { tool: "adjust", args: { sku: "x" }, seen: null }, auth());
    expect(neverListed.action).toBe("continue");
    const neverListedUnknown = precheck(ready, { tool: "nope", args: {}, seen: null }, auth());
    expect(neverListedUnknown.action === "refuse" && neverListedUnknown.error.code).toBe(-32055);
    // listed before, gone now: the client's view of it is stale
    const removed: ListedCatalog = { revision: 1, fingerprints: new Map([["gone", "sha256:x"]]) };
    const r = precheck(ready, { tool: "gone", args: {}, seen: removed }, auth());
    expect(r.action === "refuse" && r.error.code).toBe(-32052);
    // new since the client's list: it must list to see its schema
    const added = precheck(
      ready,
      { tool: "adjust", args: {}, seen: { revision: 1, fingerprints: new Map() } },
      auth(),
    );
    expect(added.action === "refuse" && added.error.code).toBe(-32052);
  });

  it("a locked vault and a refused approval are refusals; a grant reaches the intent record", async () => {
    const facts = { tool: "adjust", args: { sku: "x" }, seen: listed(2) };
    const locked = await decide({
      server: () => ready,
      facts,
      auth: auth({ vault: async () => refuse.vaultLocked(["s"]) }),
      intent,
    });
    expect(locked.action === "refuse" && locked.error.code).toBe(-32056);
    const denied = await decide({
      server: () => ready,
      facts,
      auth: auth({ obtain: async () => ({ error: refuse.approvalDenied("R1") }) }),
      intent,
    });
    expect(denied.action === "refuse" && denied.error.code).toBe(-32057);
    intents.length = 0;
    const ok = await decide({ server: () => ready, facts, auth: auth(), intent });
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
    const v = await decide({
      server: () => ready,
      facts: { tool: "adjust", args: { sku: "x" }, seen: listed(2) },
      auth: auth({
        obtain: async () => (asked++ === 0 ? { grant: "G1" } : { grant: "G2" }), // then a human gives G2
        condition: (c) => (c.grant === "G1" ? () => live : undefined),
      }),
      intent: conditional,
    });
    expect(asked).toBe(2);
    expect(v.action === "forward" && v.call.grant).toBe("G2");
    expect(recorded).toEqual([expect.objectContaining({ grant: "G2" })]);
    // A condition that never holds: decided three times, then refused, nothing recorded.
    recorded.length = 0;
    live = false;
    const never = await decide({
      server: () => ready,
      facts: { tool: "adjust", args: { sku: "x" }, seen: listed(2) },
      auth: auth({ condition: () => () => live }),
      intent: conditional,
    });
    expect(never.action).toBe("refuse");
    if (never.action === "refuse") expect(never.error.data).toMatchObject({ error: "audit_unavailable" });
    expect(recorded).toEqual([]);
  });

  it("an intent record that cannot be written refuses the call (audit_unavailable): nothing is forwarded", async () => {
    const failing: IntentPort = { intent: async () => Promise.reject(new Error("disk full")) };
    const v = await decide({
      server: () => ready,
      facts: { tool: "adjust", args: { sku: "x" }, seen: listed(2) },
      auth: null,
      intent: failing,
    });
    expect(v.action).toBe("refuse");
    if (v.action === "refuse")
      expect(v.error.data).toMatchObject({ error: "audit_unavailable", reason: "disk full" });
  });

  it("an epoch change while a human decided sends the call round again (here: held)", async () => {
    let view = ready;
    const v = await decide({
      server: () => view,
      facts: { tool: "adjust", args: { sku: "x" }, seen: listed(2) },
      auth: auth({
        obtain: async () => {
          view = { ...ready, state: "identity-pending", epoch: "E3" };
          return { grant: "G1" };
        },
      }),
      intent,
    });
    expect(v.action).toBe("hold");
  });
});

describe("arguments holding a number beyond the double range (1e400 reads as Infinity)", () => {
  const free = { name: "free", inputSchema: { type: "object" } };
  const freeSnap = snapshotOf([free], 1);
  const view: ServerView = { ...ready, snapshot: freeSnap, validator: new ArgumentValidator(freeSnap) };

  it("wherever it sits, a call is refused at step 5 naming its place and a read is refused, never throwing; a finite number there passes and digests", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 5 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 6 }),
        fc.constantFrom(...HUGE),
        async (base, steps, literal) => {
          const { text, path } = withNumber(base, steps);
          const args = JSON.parse(text(literal));
          expect(nonFiniteAt(args)).toEqual({ path, value: JSON.parse(literal) });

          const call = precheck(view, { tool: "free", args, seen: null }, auth());
          expect(call.action).toBe("invalid-arguments");
          if (call.action === "invalid-arguments") {
            expect(call.errors).toHaveLength(1);
            expect(call.errors[0]).toContain(
              `beyond the range of JSON numbers (it reads as ${JSON.parse(literal)})`,
            );
          }

          const params = { name: "p", arguments: args };
          const read = await decide({
            server: () => view,
            facts: { tool: "prompts/get", args: params, seen: null },
            read: { method: "prompts/get", target: "p", params },
            auth: auth(),
            intent,
          });
          expect(read.action).toBe("refuse");
          if (read.action === "refuse") {
            expect(read.reason).toBe("number_out_of_range");
            expect(read.error.data).toMatchObject({
              error: "number_out_of_range",
              field: expect.any(String),
            });
          }

          const finite = JSON.parse(text("1e300"));
          expect(nonFiniteAt(finite)).toBeNull();
          const passed = precheck(view, { tool: "free", args: finite, seen: null }, auth());
          expect(passed.action).toBe("continue");
          if (passed.action === "continue")
            expect(argumentsDigest(passed.call.effective)).toMatch(/^sha256:/);
        },
      ),
      { numRuns: 500 },
    );
  });
});
