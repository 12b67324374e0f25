// A gateway that re-listed (or started) and found the store's latest catalog revision naming the
// catalog it had just listed took that row for another gateway's record of the catalog: the same
// catalog again is no change. Any process of the user can insert such a row (the fingerprint is
// computed from the tools, as anyone can), and the revision's catalog_revised (its inventory and
// diff) was then never written: the audit lacked the change, though the gateway judged it and
// told the client. A row is now believed only when the catalog_revised it points to opens, in the
// writer session derived from its label, revision, fingerprint and seq, as that revision's; else
// the gateway records the revision itself and says so once on stderr.
// Real gateways before the catalog fixture, the store written with SQL, the audit read by the CLI.
import { join } from "node:path";
import Database from "better-sqlite3";
import { expect, it, onTestFinished } from "vitest";
import { snapshotOf } from "../../src/catalog/index.js";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { FETCH, FETCH_URL, NOTE } from "../helpers/wikiTools.js";

/** a third catalog: add_note gone */
const FETCH_ONLY = [FETCH_URL];

/** The row a same-user process inserts: the next revision, naming `tools` as the gateway would. */
function insertRevision(stateDir: string, revision: number, tools: ToolDef[]): string {
  const snap = snapshotOf(tools as never, 1);
  const db = new Database(join(stateDir, "portcullis.db"));
  try {
    db.pragma("busy_timeout = 10000");
    db.prepare(
      "INSERT INTO catalog_revisions (server_label, revision, fingerprint, tools_json, coverage_json, first_seen_at, first_epoch) VALUES ('wiki', ?, ?, ?, ?, ?, NULL)",
    ).run(
      revision,
      snap.fingerprint,
      JSON.stringify(tools),
      JSON.stringify(snap.coverage),
      new Date().toISOString(),
    );
  } finally {
    db.close();
  }
  return snap.fingerprint;
}

async function catalogRevised(stateDir: string) {
  return (await verifiedAuditEvents(stateDir)).filter((e) => e.type === "catalog_revised");
}

/** `portcullis audit show SEQ --json`: the record as the CLI decrypts it. */
async function shown(stateDir: string, seq: number): Promise<Record<string, unknown>> {
  const r = await runCli(["audit", "show", String(seq), "--json", "--state-dir", stateDir], {
    env: passphraseEnv(),
  });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

const NOT_BELIEVED = (revision: number) =>
  new RegExp(
    `catalog revision ${revision} of wiki names the catalog just listed, but no catalog_revised record of it was found`,
  );

it("a revision row inserted ahead of a re-list: that revision's catalog_revised is written all the same, with its diff, and a restart adds none", async () => {
  const stateDir = newStateDir();
  const cat = makeCatalog([FETCH, NOTE]);
  onTestFinished(() => cat.cleanup());
  const gw = await startGateway({
    args: ["--label", "wiki", "--", ...fixtureCommand("catalog")],
    env: cat.env,
    stateDir,
  });
  onTestFinished(() => gw.close());
  await gw.client.listTools();
  expect((await catalogRevised(stateDir)).map((e) => e.revision)).toEqual([1]);

  // the store told that revision 2 is the catalog the server is about to list
  const next = [FETCH_URL, NOTE];
  const fingerprint = insertRevision(stateDir, 2, next);
  const from = gw.received().length;
  cat.write(next);
  await waitFor(
    async () =>
      (await gw.client.listTools()).tools.some(
        (t) => t.name === "fetch_page" && "url" in (t.inputSchema.properties ?? {}),
      ),
    10_000,
    "the expanded fetch_page served",
  );
  // judged and told as before
  expect(
    gw
      .received()
      .slice(from)
      .some((m) => m.method === "notifications/tools/list_changed"),
  ).toBe(true);
  await gw.close();

  // and now audited: revision 2's record, its inventory and its diff against revision 1
  const revised = await catalogRevised(stateDir);
  expect(revised.map((e) => [e.revision, e.previousRevision, e.foundUnrecorded ?? false])).toEqual([
    [1, null, false],
    [2, 1, true],
  ]);
  const record = await shown(stateDir, revised[1]!.seq);
  const event = record.event as Record<string, unknown>;
  expect(event).toMatchObject({ type: "catalog_revised", serverLabel: "wiki", revision: 2, fingerprint });
  expect((event.inventory as ToolDef[]).map((t) => t.name).sort()).toEqual(["add_note", "fetch_page"]);
  const diff = JSON.stringify(event.diff);
  expect(diff).toContain("fetch_page");
  expect(diff).toContain("inputSchema.properties.url");
  // said once: the row was not taken for a record
  expect(gw.stderr().match(new RegExp(NOT_BELIEVED(2), "g"))).toHaveLength(1);

  // a restart over the same catalog finds the record the gateway wrote: believed, nothing more
  const again = await startGateway({
    args: ["--label", "wiki", "--", ...fixtureCommand("catalog")],
    env: cat.env,
    stateDir,
  });
  onTestFinished(() => again.close());
  await again.client.listTools();
  await again.close();
  expect(again.stderr()).not.toMatch(/names the catalog just listed/);
  expect((await catalogRevised(stateDir)).map((e) => e.revision)).toEqual([1, 2]);
});

it("a revision row inserted before a gateway starts, and one pointing to another revision's record: each revision is recorded by the gateway", async () => {
  const stateDir = newStateDir();
  const cat = makeCatalog([FETCH, NOTE]);
  onTestFinished(() => cat.cleanup());
  const start = async () => {
    const gw = await startGateway({
      args: ["--label", "wiki", "--", ...fixtureCommand("catalog")],
      env: cat.env,
      stateDir,
    });
    onTestFinished(() => gw.close());
    await gw.client.listTools();
    await gw.close();
    return gw.stderr();
  };
  await start();

  // while no gateway runs: revision 2 inserted for the catalog the server will list at the next
  // start, and pointed at revision 1's genuine record (which does not open as revision 2's)
  const fingerprint = insertRevision(stateDir, 2, FETCH_ONLY);
  const first = (await catalogRevised(stateDir))[0]!;
  const db = new Database(join(stateDir, "portcullis.db"));
  try {
    db.prepare(
      "INSERT INTO catalog_revision_records (server_label, revision, seq) VALUES ('wiki', 2, ?)",
    ).run(first.seq);
  } finally {
    db.close();
  }
  cat.write(FETCH_ONLY);
  const said = await start();

  const revised = await catalogRevised(stateDir);
  expect(revised.map((e) => [e.revision, e.previousRevision, e.foundUnrecorded ?? false])).toEqual([
    [1, null, false],
    [2, 1, true],
  ]);
  expect(revised[1]).toMatchObject({ fingerprint, epoch: expect.any(String) });
  const diff = JSON.stringify(revised[1]!.diff);
  expect(diff).toContain("add_note");
  expect(diff).toContain("inputSchema.properties.url");
  expect(said).toMatch(NOT_BELIEVED(2));
  // believed from then on
  expect(await start()).not.toMatch(/names the catalog just listed/);
  expect((await catalogRevised(stateDir)).map((e) => e.revision)).toEqual([1, 2]);
});
