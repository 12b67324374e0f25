// A catalog change recorded while another program holds the store's lock (a database browser
// inside a transaction, an sqlite3 shell inside BEGIN). The revision and its catalog_revised
// record were written with an explicit flush, which waited the busy timeout with the gateway's
// event loop held (pings, other answers and signals with it). They now wait for the lock as a
// call's intent does, the loop free; once it goes, the revision is recorded, served, and told to
// the client. Real gateway, real catalog fixture, a real second process holding the lock.
import { afterEach, describe, expect, it } from "vitest";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { startGateway } from "../helpers/gateway.js";
import { holdStoreLock } from "../helpers/lock.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { FETCH, FETCH_URL } from "../helpers/wikiTools.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a catalog change while another program holds the store's lock", () => {
  it("is recorded once the lock goes, the gateway answering meanwhile", async () => {
    const stateDir = newStateDir();
    const cat = makeCatalog([FETCH]);
    // a busy timeout of ten minutes: a write that waited for the lock inside its statement would
    // hold the gateway for the whole test
    const gw = await startGateway({
      args: ["--label", "wiki", "--approval", "none", "--", ...fixtureCommand("catalog")],
      env: { ...cat.env, PORTCULLIS_BUSY_TIMEOUT_MS: "600000" },
      stateDir,
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    await gw.client.listTools();
    await gw.client.callTool({ name: "fetch_page", arguments: { page: "a" } });

    const lock = await holdStoreLock(stateDir);
    let held = true;
    cleanup.push(() => (held ? lock.release() : undefined));
    const from = gw.received().length;
    cat.write([FETCH_URL]);
    // the re-list came back and its record met the lock (said once)
    await gw.waitForStderr(/is locked by another process/, 20_000);
    for (let i = 0; i < 3; i++) await expect(gw.client.ping()).resolves.toEqual({});
    // nothing of the new revision is told or recorded while the lock is held
    expect(
      gw
        .received()
        .slice(from)
        .some((m) => m.method === "notifications/tools/list_changed"),
    ).toBe(false);

    await lock.release();
    held = false;
    await gw.waitForNotification("notifications/tools/list_changed", 20_000, from);
    const listed = await gw.client.listTools();
    expect(Object.keys(listed.tools[0]!.inputSchema.properties ?? {})).toContain("url");
    await gw.close();
    const revised = (await verifiedAuditEvents(stateDir)).filter((e) => e.type === "catalog_revised");
    expect(revised.map((e) => e.revision)).toEqual([1, 2]);
  }, 90_000);
});
