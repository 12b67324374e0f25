import { fork } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  diffCatalogs,
  getRevision,
  latestRevision,
  listRevisions,
  recordRevision,
  snapshotOf,
  type Tool,
} from "../../src/catalog/index.js";
import { openStore, type Store } from "../../src/store/db.js";
import { edit, postComment, readIssue, repoSearch, tempStore, wire } from "./fixtures.js";

let store: ReturnType<typeof tempStore>;
let db: Store;
beforeEach(() => {
  store = tempStore();
  db = store.db;
});
afterEach(() => store.close());

describe("revisions", () => {
  it("the first catalog is revision 1; the same catalog again keeps it", () => {
    const first = recordRevision(db, "inventory-local", snapshotOf([readIssue, repoSearch], 1), "E1");
    expect(first).toEqual({ revision: 1, changed: true, previous: null });
    const again = recordRevision(db, "inventory-local", snapshotOf(wire([readIssue, repoSearch]), 1), "E2");
    expect(again).toEqual({ revision: 1, changed: false, previous: null });
    expect(listRevisions(db, "inventory-local")).toHaveLength(1);
    // the epoch that first saw it stays
    expect(latestRevision(db, "inventory-local")?.firstEpoch).toBe("E1");
  });

  it("a restart that lists the same tools in another order, keys reordered, keeps the revision", () => {
    recordRevision(db, "s", snapshotOf([readIssue, repoSearch], 1), "E1");
    const shuffled = JSON.parse(
      JSON.stringify([repoSearch, readIssue], (_k, v) =>
        v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).reverse()) : v,
      ),
    ) as Tool[];
    expect(JSON.stringify(shuffled[1]?.inputSchema)).not.toBe(JSON.stringify(readIssue.inputSchema));
    const r = recordRevision(db, "s", snapshotOf(shuffled, 2), "E2");
    expect(r).toEqual({ revision: 1, changed: false, previous: null });
  });

  it("a changed catalog gets the next revision and returns the previous tools for the diff", () => {
    recordRevision(db, "s", snapshotOf([readIssue], 1), null);
    const r = recordRevision(db, "s", snapshotOf([readIssue, postComment], 1), "E2");
    expect(r.revision).toBe(2);
    expect(r.changed).toBe(true);
    expect(r.previous?.revision).toBe(1);
    expect(r.previous?.tools).toEqual([readIssue]);
    const d = diffCatalogs(r.previous?.tools ?? [], [readIssue, postComment]);
    expect(d.entries.map((e) => `${e.kind} ${e.tool}`)).toEqual(["added post_comment"]);
    // a revert is a change too: revisions only grow
    const back = recordRevision(db, "s", snapshotOf([readIssue], 1), "E3");
    expect(back).toMatchObject({ revision: 3, changed: true, previous: { revision: 2 } });
  });

  it("stores tools as received, with coverage, and reads them back", () => {
    const dup = edit(readIssue, (t) => (t.title = "dup"));
    const snap = snapshotOf([postComment, readIssue, dup], 3);
    recordRevision(db, "s", snap, "E1");
    const got = getRevision(db, "s", 1);
    // every entry kept, the name listed with two definitions included (served: post_comment alone)
    expect(got?.tools).toEqual([postComment, readIssue, dup]);
    expect(snap.tools).toEqual([postComment]);
    expect(got?.fingerprint).toBe(snap.fingerprint);
    expect(got?.firstEpoch).toBe("E1");
    expect(Date.parse(got?.firstSeenAt ?? "")).not.toBeNaN();
    expect(got?.coverage).toMatchObject({
      pages: 3,
      tools: 3,
      complete: true,
      duplicateNames: ["read_issue"],
      ambiguousNames: ["read_issue"],
    });
    // the stored tools reproduce the fingerprint
    expect(snapshotOf(got?.tools ?? [], 1).fingerprint).toBe(snap.fingerprint);
    expect(getRevision(db, "s", 2)).toBeNull();
    expect(latestRevision(db, "other")).toBeNull();
  });

  it("labels are independent", () => {
    recordRevision(db, "a", snapshotOf([readIssue], 1), null);
    recordRevision(db, "a", snapshotOf([repoSearch], 1), null);
    expect(recordRevision(db, "b", snapshotOf([repoSearch], 1), null).revision).toBe(1);
    expect(listRevisions(db, "a").map((r) => [r.revision, r.tools])).toEqual([
      [1, 1],
      [2, 1],
    ]);
    expect(listRevisions(db, "b")[0]?.fingerprint).toBe(listRevisions(db, "a")[1]?.fingerprint);
  });

  it("concurrent gateways recording at once never duplicate or skip a revision", async () => {
    recordRevision(db, "shared", snapshotOf([readIssue], 1), null);
    const lib = transpileForNode(store.dir);
    const script = join(store.dir, "record.mjs");
    const a = JSON.stringify([readIssue]);
    const b = JSON.stringify([readIssue, postComment]);
    const startAt = Date.now() + 1500;
    // Four processes start together and flip the catalog between two versions, as gateways
    // racing on reconnect would: every record reads the latest revision, then maybe inserts.
    writeFileSync(
      script,
      `import { recordRevision, snapshotOf } from ${JSON.stringify(lib.catalog)};
       import { openStore } from ${JSON.stringify(lib.store)};
       const db = openStore(process.argv[2]);
       const snaps = [snapshotOf(${a}, 1), snapshotOf(${b}, 1)];
       while (Date.now() < ${startAt}) {}
       let changed = 0;
       for (let i = 0; i < 150; i++) if (recordRevision(db, "shared", snaps[(i + process.pid) % 2], null).changed) changed++;
       db.close();
       process.send(changed);`,
    );
    const runs = Array.from(
      { length: 4 },
      () =>
        new Promise<number>((resolve, reject) => {
          const child = fork(script, [store.dir], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
          let got = -1;
          child.on("message", (m) => {
            got = m as number;
          });
          child.on("error", reject);
          // "close", not "exit": the exit can be seen before its message is read off the channel
          child.on("close", (code) =>
            code === 0 ? resolve(got) : reject(new Error(`child exited ${code}`)),
          );
        }),
    );
    // wait for every child before judging, so none is still loading when the directory goes
    const settled = await Promise.allSettled(runs);
    const failed = settled.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const changed = settled.reduce((x, r) => x + (r.status === "fulfilled" ? r.value : 0), 0);
    const revs = listRevisions(db, "shared");
    // contiguous, one row per recorded change, and never the same catalog twice in a row
    expect(revs.map((r) => r.revision)).toEqual(revs.map((_r, i) => i + 1));
    expect(revs.length).toBe(changed + 1);
    expect(revs.length).toBeGreaterThan(2);
    for (let i = 1; i < revs.length; i++) expect(revs[i]?.fingerprint).not.toBe(revs[i - 1]?.fingerprint);
    const other = openStore(store.dir);
    expect(latestRevision(other, "shared")?.fingerprint).toBe(revs.at(-1)?.fingerprint);
    other.close();
  });
});

/**
 * Child processes cannot load TypeScript here (no loader is installed), so the catalog and store
 * sources, with every relative import they reach, are transpiled to plain ESM in `dir`, next to
 * a node_modules link to the repository's.
 */
function transpileForNode(dir: string): { catalog: string; store: string } {
  const repo = fileURLToPath(new URL("../../", import.meta.url));
  const out = join(dir, "lib");
  const todo = ["src/catalog/index.ts", "src/store/db.ts"];
  const done = new Set<string>();
  while (todo.length > 0) {
    const rel = todo.pop() as string;
    if (done.has(rel)) continue;
    done.add(rel);
    const source = readFileSync(join(repo, rel), "utf8");
    for (const m of source.matchAll(/(?:from|import)\s*["'](\.{1,2}\/[^"']+)\.js["']/g)) {
      todo.push(posix.join(posix.dirname(rel), `${m[1]}.ts`));
    }
    const js = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    mkdirSync(join(out, posix.dirname(rel)), { recursive: true });
    writeFileSync(join(out, rel.replace(/\.ts$/, ".js")), js);
  }
  writeFileSync(join(out, "package.json"), '{"type":"module"}');
  symlinkSync(join(repo, "node_modules"), join(out, "node_modules"));
  return { catalog: join(out, "src/catalog/index.js"), store: join(out, "src/store/db.js") };
}
