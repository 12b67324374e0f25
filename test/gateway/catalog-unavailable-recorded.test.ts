// A call, guarded read or 2026-07-28 listen for resources refused catalog_unavailable (the epoch's
// tools/list failed: held requests are answered at once, and so is each one for a second after)
// is in the audit as one refused identity_pending is: authorization_denied, reason
// catalog_unavailable, with its run, the epoch whose catalog failed, its tool (a read: its method
// and target; a listen: one record per uri, `resources/subscribe URI`) and the digest of its
// arguments. A tools/list refused so asks for nothing of the server's: not recorded. Real gateway,
// real fixture server (catalog.mjs, the official SDK, its tools/list failing while a file exists:
// FIXTURE_LIST_FAIL), a raw client on plain pipes, the audit read back after the gateway ended.
//
// What failed before: none of these refusals was recorded; the agent's requests left no trace.
import { afterEach, describe, expect, it } from "vitest";
import { argumentsDigest } from "../../src/audit/events.js";
import { auditEvents } from "../helpers/approvals.js";
import { failingCatalogGateway } from "../helpers/failingCatalog.js";
import { modernMeta } from "../helpers/modernMeta.js";
import type { RawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function failingGateway(): RawGateway {
  return failingCatalogGateway(cleanup).gw;
}

/** The gateway's authorization_denied records with reason catalog_unavailable, once it has ended. */
async function unavailableDenials(gw: RawGateway) {
  gw.closeStdin();
  await gw.exited;
  const events = await auditEvents(gw.stateDir);
  const runs = events.filter((e) => e.type === "run_started").map((e) => e.run);
  expect(runs).toHaveLength(1);
  const denied = events.filter(
    (e) => e.type === "authorization_denied" && e.reason === "catalog_unavailable",
  );
  return { run: runs[0], denied };
}

/** The epoch a refusal names (`data.currentEpoch`), which must be catalog_unavailable. */
function unavailableEpoch(m: { error?: { data?: unknown } }): unknown {
  const data = m.error?.data as { error?: unknown; currentEpoch?: unknown } | undefined;
  expect(data?.error).toBe("catalog_unavailable");
  expect(typeof data?.currentEpoch).toBe("string");
  return data?.currentEpoch;
}

describe("a request refused catalog_unavailable", () => {
  it("a call and a guarded read: recorded authorization_denied; a tools/list: not", async () => {
    const gw = failingGateway();
    await gw.initialize();
    const list = await gw.request("tools/list", {}, 10_000);
    const epoch = unavailableEpoch(list);
    const args = { tag: "no catalog" };
    const call = await gw.request("tools/call", { name: "echo", arguments: args }, 10_000);
    expect(unavailableEpoch(call)).toBe(epoch);
    const read = await gw.request("resources/read", { uri: "file:///etc/motd" }, 10_000);
    expect(unavailableEpoch(read)).toBe(epoch);
    const { run, denied } = await unavailableDenials(gw);
    expect(denied.map((e) => e.requestId)).toEqual([call.id, read.id]);
    expect(denied[0]).toMatchObject({
      run,
      serverLabel: "nolist",
      tool: "echo",
      epoch,
      argumentsDigest: argumentsDigest(args),
    });
    expect(denied[1]).toMatchObject({
      run,
      tool: "resources/read file:///etc/motd",
      epoch,
      argumentsDigest: argumentsDigest({ uri: "file:///etc/motd" }),
    });
  }, 60_000);

  it("a 2026-07-28 listen for resources: one record per uri, as the guard's refusal of it", async () => {
    const gw = failingGateway();
    const meta = modernMeta();
    const uris = ["file:///a", "file:///b"];
    gw.send({
      jsonrpc: "2.0",
      id: "listen",
      method: "subscriptions/listen",
      params: { _meta: meta, notifications: { resourceSubscriptions: uris } },
    });
    const listen = await gw.next((m) => m.id === "listen", 10_000);
    const epoch = unavailableEpoch(listen);
    const { run, denied } = await unavailableDenials(gw);
    expect(denied.map((e) => e.tool)).toEqual(uris.map((u) => `resources/subscribe ${u}`));
    for (const [i, uri] of uris.entries())
      expect(denied[i]).toMatchObject({
        run,
        requestId: "listen",
        epoch,
        argumentsDigest: argumentsDigest({ uri }),
      });
  }, 60_000);
});
