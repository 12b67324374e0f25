// onExpand "run" ends every grant of the run when the catalog expands within the epoch. Whether the
// catalog changed was read from the store's revision numbers: a same-user process that rewrote
// the latest revision's fingerprint to the one of the catalog about to be listed (any process of
// the user can compute it) made the expanded catalog read as "the revision already served", and
// the run's grants stayed live, the client was never told the list changed, and no
// catalog_revised was recorded. The gateway now judges a change by the catalog it served itself.
// Real gateway before the catalog fixture, approvals by the real CLI, the store written with SQL.
import { join } from "node:path";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import Database from "better-sqlite3";
import { expect, it, onTestFinished } from "vitest";
import { snapshotOf } from "../../src/catalog/index.js";
import {
  decideByCli,
  nextStoredRequest,
  storedPending,
  verifiedAuditEvents,
  waitForPending,
} from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { waitFor } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { FETCH, FETCH_URL, NOTE } from "../helpers/wikiTools.js";

it("a latest revision rewritten to name the expanded catalog: the run's grants end all the same, and the client is told", async () => {
  const stateDir = newStateDir();
  const cat = makeCatalog([FETCH, NOTE]);
  const gw = await startGateway({
    args: ["--label", "wiki", "--approval-timeout", "30000", "--", ...fixtureCommand("catalog")],
    env: cat.env,
    stateDir,
  });
  onTestFinished(() => cat.cleanup());
  onTestFinished(() => gw.close());
  const db = new Database(join(stateDir, "portcullis.db"));
  db.pragma("busy_timeout = 10000");
  onTestFinished(() => {
    db.close();
  });
  await gw.client.listTools();
  const call = (name: string, args: Record<string, unknown>) =>
    gw.client.request({ method: "tools/call", params: { name, arguments: args } }, CallToolResultSchema);
  const seen = new Set<string>();
  for (const [name, args] of [
    ["fetch_page", { page: "a" }],
    ["add_note", { text: "a" }],
  ] as const) {
    const answer = call(name, args);
    await decideByCli(
      stateDir,
      "approve",
      (await nextStoredRequest(stateDir, seen)).request,
      "--for",
      "session",
    );
    await answer;
  }
  await call("add_note", { text: "b" });
  expect(storedPending(stateDir)).toEqual([]);

  // the store's latest revision made to name the catalog the server is about to list
  const next = [FETCH_URL, NOTE];
  const rewritten = db
    .prepare(
      "UPDATE catalog_revisions SET fingerprint = ? WHERE server_label = 'wiki' AND revision = (SELECT max(revision) FROM catalog_revisions WHERE server_label = 'wiki')",
    )
    .run(snapshotOf(next as never, 1).fingerprint).changes;
  expect(rewritten).toBe(1);
  const from = gw.received().length;
  cat.write(next);
  // the gateway has re-listed once the client is served the new definition
  await waitFor(
    async () =>
      (await gw.client.listTools()).tools.some(
        (t) => t.name === "fetch_page" && "url" in (t.inputSchema.properties ?? {}),
      ),
    10_000,
    "the expanded fetch_page served",
  );
  const told = gw
    .received()
    .slice(from)
    .some((m) => m.method === "notifications/tools/list_changed");

  // add_note did not change, but the run's approval was of the old inventory: it asks again
  const note = call("add_note", { text: "c" }).then(
    () => "answered",
    () => "refused",
  );
  const asked = await waitForPending(
    stateDir,
    (l) => l.find((p) => !seen.has(p.request)) ?? null,
    10_000,
    "an approval request",
    storedPending,
  );
  expect(asked.tool).toBe("add_note");
  expect(cat.records().map((r) => r.args.text ?? r.args.page)).toEqual(["a", "a", "b"]);
  await gw.close();
  expect(await note).toBe("refused");
  // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
  await waitFor(
    () =>
      /expands authority \(fetch_page\)/.test(gw.stderr()) &&
      /no longer names the catalog this gateway served/.test(gw.stderr()),
    20_000,
    "the gateway's lines on the rewritten revision",
  );
  expect(gw.stderr()).toMatch(/expands authority \(fetch_page\)/);
  expect(told).toBe(true);
  expect(gw.stderr()).toMatch(/catalog revision 1 of wiki no longer names the catalog this gateway served/);
  // and the change is in the audit, as a revision of its own
  const revised = (await verifiedAuditEvents(stateDir)).filter((e) => e.type === "catalog_revised");
  expect(revised.map((e) => [e.revision, e.previousRevision])).toEqual([
    [1, null],
    [2, 1],
  ]);
});
