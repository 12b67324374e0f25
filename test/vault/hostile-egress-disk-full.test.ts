// The egress proxy's destination index (what `portcullis egress` and an approval's review read) is
// written by the recorder every 200 ms (src/vault/egress/record.ts, flush). When the store's disk
// is full, that write fails; the recorder kept the counts and tried again at every batch without a
// word, and dropped them at the gateway's end without a word either: nobody learnt that the index
// a review reads lacked the destinations the server had contacted. What must hold: one warning
// naming the store, the full disk and what to do (the audit sink's wording: writeProblem), not
// one per batch and never SQLite's phrase; and at the end, the counts that could not be written
// are said. A real store on a 4 MiB tmpfs mounted for the test (root only: where mount is refused
// the test skips and says why), its real audit sink, the recorder the gateway uses.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/index.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import { openStore } from "../../src/store/db.js";
import type { EgressRecord } from "../../src/vault/egress/proxy.js";
import { EgressRecorder, listDestinations } from "../../src/vault/egress/record.js";
import { smallDisk } from "../helpers/smallDisk.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const quiet = { info() {}, warn() {}, debug() {}, status() {} };

const request = (host: string): EgressRecord => ({
  host,
  port: 443,
  method: "GET",
  scheme: "tunnel",
  released: [],
  withheld: [],
  call: null,
  epoch: "e1",
  outcome: "tunnelled",
});

describe("the egress index on a full disk", () => {
  it("is said once with the store, the cause and what to do, and what is dropped at the end is said", async (ctx) => {
    const disk = smallDisk(cleanup);
    if (typeof disk === "string") return ctx.skip(disk);
    const { stateDir } = disk;
    const store = openStore(stateDir);
    cleanup.push(() => {
      store.close();
    });
    const events = auditSink(AuditLog.open(store, stateDir, { sync: "normal" }), quiet);
    const warnings: string[] = [];
    const log = { ...quiet, warn: (line: string) => warnings.push(line) };
    const r = new EgressRecorder(store, "api", events, 60_000, undefined, log);

    r.record(request("before.example"));
    r.flush();
    expect(listDestinations(store).map((d) => d.host)).toEqual(["before.example"]);

    disk.fill();
    for (let n = 0; n < 20; n++) {
      r.record(request(`full-${n}.example`));
      r.flush();
    }
    const refused = warnings.filter((l) => l.includes("egress"));
    expect(refused, warnings.join("\n")).toHaveLength(1);
    expect(refused[0]).toContain(
      `the store ${join(stateDir, "portcullis.db")} cannot be written: the disk is full.`,
    );
    expect(refused[0]).toContain(`free space on the file system that holds ${stateDir}`);
    expect(warnings.join("\n")).not.toContain("database or disk is full");

    // the gateway ends with the disk still full: what was never written is said, not dropped unsaid
    r.close();
    const dropped = warnings.filter((l) => l.includes("egress")).slice(1);
    expect(dropped, warnings.join("\n")).toHaveLength(1);
    expect(dropped[0]).toMatch(/20 destinations? .*not written/);
    expect(dropped[0]).toContain("the disk is full");
    events.flush();
  });
});
