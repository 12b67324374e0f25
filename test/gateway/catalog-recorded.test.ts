// A new catalog revision and its `catalog_revised` record are one transaction (CatalogSync on a
// real store and audit sink, fetching from the real catalog fixture server over its pipes): a
// writer that takes the store's lock the moment the revision is known, and keeps it past the busy
// timeout, cannot leave a revision stored and never recorded (the same catalog fetched again is
// no change, so nothing would record it later).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/log.js";
import { listRevisions } from "../../src/catalog/index.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import { CatalogSync } from "../../src/gateway/catalogSync.js";
import type { Response } from "../../src/relay/jsonrpc.js";
import type { Store } from "../../src/store/db.js";
import type { LinkGeneration } from "../../src/supervisor/link.js";
import { chainEvents, twoConnectionsPerTest } from "../approval/helpers.js";
import { FIXTURES, NODE } from "../helpers/paths.js";

let dir: string;
let db: Store;
let other: Store;
twoConnectionsPerTest("portcullis-catalog-recorded-", (s) => {
  ({ dir, db, other } = s);
});

const quiet = { info() {}, warn() {}, debug() {}, status() {} };
const tool = (name: string) => ({ name, description: `the ${name} tool`, inputSchema: { type: "object" } });

let client: Client | null = null;
afterEach(async () => {
  await client?.close();
  client = null;
});

describe("a new catalog revision", () => {
  it("is never stored without its catalog_revised record: a writer taking the lock right then loses nothing", async () => {
    const catalog = join(dir, "catalog.json");
    writeFileSync(catalog, JSON.stringify([tool("read_status")]));
    client = new Client({ name: "catalog-recorded-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: NODE,
        args: [FIXTURES.catalog],
        env: { ...(process.env as Record<string, string>), FIXTURE_CATALOG: catalog, FIXTURE_NOTIFY: "0" },
      }),
    );
    const server = client;
    const events = auditSink(AuditLog.open(db, dir, { sync: "normal" }), quiet);
    const timeout = Number(db.pragma("busy_timeout", { simple: true }));
    let takeLock = false;
    const sync = new CatalogSync({
      label: "cat",
      store: db,
      events,
      log: quiet,
      // the gateway's own tools/list, sent to the real server
      request: async (_gen, _method, params): Promise<Response> => ({
        jsonrpc: "2.0",
        id: 1,
        result: await server.listTools(params),
      }),
      isCurrent: () => true,
      settle: () => {},
      // told in the turn that recorded the revision: another connection (an `approve`, any
      // command opening the store) takes the write lock now, and keeps it past the busy timeout
      changed: () => {
        if (!takeLock) return;
        db.pragma("busy_timeout = 50");
        other.exec("BEGIN IMMEDIATE");
      },
      fetched: () => {},
      refetch: async () => {},
      recovered: () => {},
    });
    const gen = { epoch: "01JQ7R4S4S0QJ7GZP1S2EPOCH1", alive: true } as unknown as LinkGeneration;
    await sync.refresh(gen, true);
    expect(sync.revision).toBe(1);

    writeFileSync(catalog, JSON.stringify([tool("read_status"), tool("adjust_inventory")]));
    takeLock = true;
    try {
      await sync.refresh(gen, true);
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      if (other.inTransaction) other.exec("COMMIT");
      db.pragma(`busy_timeout = ${timeout}`);
    }
    events.flush();
    expect(sync.revision).toBe(2);
    expect(listRevisions(db, "cat").map((r) => r.revision)).toEqual([1, 2]);
    const revised = (await chainEvents(dir)).filter((e) => e.type === "catalog_revised");
    expect(revised.map((e) => [e.revision, e.previousRevision])).toEqual([
      [1, null],
      [2, 1],
    ]);
    expect(JSON.stringify(revised[1]!.diff)).toContain("adjust_inventory");
  });
});
