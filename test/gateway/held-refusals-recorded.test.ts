// A call or guarded read held for the server's catalog and then refused identity_pending is in the
// audit as every other refusal of one is: authorization_denied, reason identity_pending, with its
// run, the epoch whose catalog it waited for, its tool (or method and target) and the digest of
// its arguments. Both ways a held request is refused so: at the hold timeout, and at once when as
// many as may be held already wait (MAX_HELD). Real gateway, real fixture server (exhaust.mjs, its
// tools/list answered only once a file exists: FIXTURE_LIST_GATE), a raw client on plain pipes,
// the audit read back after the gateway ended. A 2026-07-28 subscriptions/listen refused so is
// recorded as the guard's refusal of its uris is: one record per uri, `resources/subscribe URI`.
//
// What failed before: neither refusal was recorded; the agent's calls left no trace in the audit.
// Then a listen was recorded once, as `subscriptions/listen null`, naming none of its uris.
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { argumentsDigest } from "../../src/audit/events.js";
import { auditActivity, auditEvents } from "../helpers/approvals.js";
import { type Msg, startExhaustGateway } from "../helpers/exhaustGateway.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { modernMeta } from "../helpers/modernMeta.js";

/** MAX_HELD (src/gateway/guardedRequests.ts), written out: the case is also run against a gateway without it */
const MAX_HELD = 4096;
const NOT_HELD = /as many requests as portcullis holds for it already wait; this one was not held/;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A gateway whose server answers tools/list once `open` was called; held requests wait `holdMs`. */
async function gatedGateway(holdMs: number) {
  const gate = join(tempDir("portcullis-held-audit-"), "gate");
  cleanup.push(() => removeDir(dirname(gate)));
  const g = startExhaustGateway(
    {
      label: "held",
      env: { FIXTURE_LIST_GATE: gate },
      args: ["--hold-timeout", String(holdMs)],
      stderr: "collected",
    },
    (end) => cleanup.push(end),
  );
  await g.initialize({});
  g.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  return { g, open: () => writeFileSync(gate, "") };
}

/** The epoch a refusal names (`data.currentEpoch`). */
function epochOf(m: Msg): unknown {
  return (m.error?.data as { currentEpoch?: unknown } | undefined)?.currentEpoch;
}

/** The gateway's authorization_denied records with reason identity_pending, and the run it recorded. */
async function pendingDenials(stateDir: string) {
  const events = await auditEvents(stateDir);
  const runs = events.filter((e) => e.type === "run_started").map((e) => e.run);
  expect(runs).toHaveLength(1);
  const denied = events.filter((e) => e.type === "authorization_denied" && e.reason === "identity_pending");
  return { run: runs[0], denied };
}

describe("a request held for the server's catalog and refused identity_pending", () => {
  it("at the hold timeout: recorded authorization_denied, as a call or read refused otherwise is", async () => {
    const { g } = await gatedGateway(1500);
    const args = { tag: "held past its time" };
    g.send({ jsonrpc: "2.0", id: "call", method: "tools/call", params: { name: "echo", arguments: args } });
    g.send({ jsonrpc: "2.0", id: "read", method: "resources/read", params: { uri: "exhaust://doc" } });
    // a tools/list held with them is refused so too, and is no call: not recorded
    g.send({ jsonrpc: "2.0", id: "list", method: "tools/list" });
    const call = await g.answer("call");
    const read = await g.answer("read");
    for (const m of [call, read, await g.answer("list")])
      expect(m.error?.data?.error).toBe("identity_pending");
    const epoch = epochOf(call);
    expect(typeof epoch).toBe("string");
    await g.end();
    const { run, denied } = await pendingDenials(g.stateDir);
    expect(run).toEqual(expect.any(String));
    expect(denied.map((e) => e.requestId).sort()).toEqual(["call", "read"]);
    expect(denied.find((e) => e.requestId === "call")).toMatchObject({
      run,
      serverLabel: "held",
      tool: "echo",
      epoch,
      argumentsDigest: argumentsDigest(args),
    });
    expect(denied.find((e) => e.requestId === "read")).toMatchObject({
      run,
      tool: "resources/read exhaust://doc",
      epoch,
      argumentsDigest: argumentsDigest({ uri: "exhaust://doc" }),
    });
    // and `audit activity` lists both as refused calls, the refusal's reason as their decision
    const rows = (await auditActivity(g.stateDir)).filter((r) => r.call === '"call"' || r.call === '"read"');
    expect(rows.map((r) => [r.call, r.tool, r.epoch, r.decision, r.outcome])).toEqual([
      ['"call"', "echo", epoch, "identity_pending", "refused"],
      ['"read"', "resources/read exhaust://doc", epoch, "identity_pending", "refused"],
    ]);
  }, 60_000);

  it("a 2026-07-28 listen for resources at the hold timeout: one record per uri, as the guard's refusal of it", async () => {
    const { g } = await gatedGateway(1500);
    const meta = modernMeta();
    const uris = ["exhaust://a", "exhaust://b"];
    g.send({
      jsonrpc: "2.0",
      id: "listen",
      method: "subscriptions/listen",
      // a uri named twice is one subscription, and one record
      params: { _meta: meta, notifications: { resourceSubscriptions: [...uris, uris[0]] } },
    });
    const listen = await g.answer("listen");
    expect(listen.error?.data?.error).toBe("identity_pending");
    const epoch = epochOf(listen);
    await g.end();
    const { run, denied } = await pendingDenials(g.stateDir);
    // before: one record, tool "subscriptions/listen null" (a listen has no `uri` of its own)
    expect(denied.map((e) => e.tool)).toEqual(uris.map((u) => `resources/subscribe ${u}`));
    for (const [i, uri] of uris.entries())
      expect(denied[i]).toMatchObject({
        run,
        requestId: "listen",
        epoch,
        argumentsDigest: argumentsDigest({ uri }),
      });
    // each a call key of its own, as each uri of a listen the guard refused has
    expect(new Set(denied.map((e) => e.callKey)).size).toBe(uris.length);
  }, 60_000);

  it(`at once past ${MAX_HELD} held: each refused call or read recorded once; those held and served are not`, async () => {
    const { g, open } = await gatedGateway(60_000);
    const extra = 3;
    const count = MAX_HELD + extra;
    for (let i = 0; i < count; i++)
      g.send({
        jsonrpc: "2.0",
        id: `s${i}`,
        method: "tools/call",
        params: { name: "echo", arguments: { tag: `s${i}` } },
      });
    const ids = [...Array(count).keys()].map((i) => `s${i}`);
    const refused = () => ids.filter((id) => NOT_HELD.test(g.answers.get(id)?.error?.message ?? ""));
    await waitFor(() => refused().length === extra, 20_000, `${extra} calls refused`);
    // a guarded read past the bound is refused and recorded the same way
    g.send({ jsonrpc: "2.0", id: "read", method: "resources/read", params: { uri: "exhaust://doc" } });
    const read = await g.answer("read");
    expect(read.error?.message).toMatch(NOT_HELD);
    const epoch = epochOf(read);
    expect(typeof epoch).toBe("string");
    // those held are served once the catalog is in: no refusal of theirs to record
    open();
    await waitFor(() => ids.every((id) => g.answers.has(id)), 30_000, "every call answered");
    expect(ids.filter((id) => g.text(g.answers.get(id) ?? {}) === `echo ${id}`)).toHaveLength(MAX_HELD);
    await g.end();
    const { run, denied } = await pendingDenials(g.stateDir);
    const refusedIds = refused();
    expect(denied.map((e) => e.requestId).sort()).toEqual([...refusedIds, "read"].sort());
    for (const id of refusedIds)
      expect(denied.find((e) => e.requestId === id)).toMatchObject({
        run,
        tool: "echo",
        epoch,
        argumentsDigest: argumentsDigest({ tag: id }),
      });
    expect(denied.find((e) => e.requestId === "read")).toMatchObject({
      run,
      tool: "resources/read exhaust://doc",
      epoch,
    });
  }, 90_000);
});
