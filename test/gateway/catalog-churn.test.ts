// A server whose tool catalog never settles, and that floods list_changed: every re-list that
// finds a new revision stores the whole list and an audit record, so the gateway bounds how fast,
// then how many, a server can make it store (src/gateway/relistPace.ts). Real gateway, real
// fixture server (unruly.mjs), raw client.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PACE } from "../../src/gateway/relistPace.js";
import { removeDir, sleep, tempDir, waitFor } from "../helpers/files.js";
import { runCli, type WireMessage } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawPeer, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A gateway in front of unruly.mjs in `mode`; `stable` is the file that makes its catalog stable. */
function unruly(mode: "churn" | "alternate"): { gw: RawPeer & { stateDir: string }; stable: string } {
  const dir = tempDir("pc-churn-");
  const stable = join(dir, "stable");
  const gw = rawGateway({
    args: ["--label", "unruly", "--approval", "none", "--", ...fixtureCommand("unruly")],
    env: { FIXTURE_MODE: mode, FIXTURE_STABLE: stable },
  });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  return { gw, stable };
}

/** The revisions stored for the label, as `portcullis catalog list` reads them from the store. */
async function storedRevisions(gw: { stateDir: string }): Promise<number> {
  const r = await runCli(["catalog", "list", "unruly", "--json"], { stateDir: gw.stateDir });
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { revisions: unknown[] }).revisions.length;
}

function textOf(m: WireMessage): string {
  return (m.result as { content?: { text?: string }[] } | undefined)?.content?.[0]?.text ?? "";
}

function descriptionOf(list: WireMessage, tool: string): string {
  const tools =
    (list.result as { tools?: { name: string; description?: string }[] } | undefined)?.tools ?? [];
  return tools.find((t) => t.name === tool)?.description ?? "";
}

/** A call's answer: the server's, or the documented refusal of a client behind the catalog. */
function servedOrStale(m: WireMessage): string {
  if (m.error) return (m.error.data as { error?: string } | undefined)?.error ?? `code ${m.error.code}`;
  return textOf(m).startsWith("ok t1 ") ? "served" : `unexpected ${JSON.stringify(m.result)}`;
}

describe("a catalog that changes on every tools/list, under a flood of list_changed", () => {
  it("stores a few revisions, not one per list_changed; stays responsive; a stable catalog is served again", async () => {
    const { gw, stable } = unruly("churn");
    await gw.initialize();
    await gw.request("tools/list");
    const answers = new Set<string>();
    const until = Date.now() + 3_000;
    while (Date.now() < until) {
      expect((await gw.request("ping")).result).toEqual({});
      await gw.request("tools/list");
      answers.add(servedOrStale(await gw.request("tools/call", { name: "t1", arguments: {} })));
      await sleep(100);
    }
    // every call got the server's answer or catalog_stale (a revision landed between list and call)
    expect([...answers].filter((a) => a !== "served" && a !== "catalog_stale")).toEqual([]);
    // unpaced, this was one revision per re-list: hundreds in three seconds
    const churned = await storedRevisions(gw);
    expect(churned).toBeGreaterThan(PACE.FREE_CHANGES);
    expect(churned).toBeLessThanOrEqual(12);
    // the pacing is said once the revision that starts it has been committed (catalogSync's
    // paceRelist runs after the store's write resolves): with that revision just in the store, the
    // line may not be written yet
    const paced = /tool catalog changed on 3 re-lists in a row: .*next re-lists wait/;
    await waitFor(() => paced.test(gw.stderr()), 10_000, "the line saying the re-lists are paced").catch(
      () => null,
    );
    expect(gw.stderr()).toMatch(paced);

    // the server settles: the next paced re-list finds the stable catalog, and it is served
    writeFileSync(stable, "");
    await waitFor(
      async () => descriptionOf(await gw.request("tools/list"), "t1").endsWith("version stable"),
      30_000,
      "the stable catalog in tools/list",
    );
    expect(servedOrStale(await gw.request("tools/call", { name: "t1", arguments: {} }))).toBe("served");
    expect(await storedRevisions(gw)).toBeLessThanOrEqual(churned + 2);
  }, 60_000);

  it("stops re-listing an epoch that spent its budget of revisions; a new epoch starts afresh", async () => {
    // a catalog that looks stable one list in two would reset the backoff every other re-list:
    // the budget is what bounds it
    const { gw, stable } = unruly("alternate");
    await gw.initialize();
    await gw.request("tools/list");
    await waitFor(() => /no longer re-lists epoch=/.test(gw.stderr()), 30_000, "the budget to be spent");
    const spent = await storedRevisions(gw);
    expect(spent).toBe(PACE.BUDGET + 1); // the epoch's first catalog, and the budget's revisions
    await sleep(1_000);
    expect(await storedRevisions(gw)).toBe(spent); // list_changed keeps coming; nothing is stored

    // calls are judged against the last verified revision, which tools/list serves
    const list = await gw.request("tools/list");
    expect(descriptionOf(list, "t1")).toMatch(/version \d+$/);
    expect(servedOrStale(await gw.request("tools/call", { name: "t1", arguments: {} }))).toBe("served");

    // a new epoch (the server crashes and is respawned) is listed again: its stable catalog is served
    writeFileSync(stable, "");
    const crashed = await gw.request("tools/call", { name: "crash_now", arguments: {} });
    expect((crashed.error?.data as { error?: string } | undefined)?.error).toBe("epoch_transition");
    await waitFor(() => /new execution epoch: .*respawn/.test(gw.stderr()), 15_000, "the respawn");
    await waitFor(
      async () => descriptionOf(await gw.request("tools/list"), "t1").endsWith("version stable"),
      15_000,
      "the new epoch's catalog in tools/list",
    );
    expect(servedOrStale(await gw.request("tools/call", { name: "t1", arguments: {} }))).toBe("served");
  }, 60_000);
});
