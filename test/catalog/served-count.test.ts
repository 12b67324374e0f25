// `catalog list` and the console's Catalog page count a revision's tools in SQL, as served: a
// revision stores every entry a server listed, copies of one definition and every definition of
// an ambiguous name included. Rows written as a gateway writes them are counted as served; rows
// any process of the user rewrote into other shapes are counted without failing the query (a
// json_extract on a list element that is a string did: "malformed JSON", and `catalog list`
// stopped). Real store file, the module's own reads.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { latestRevisions, listRevisions } from "../../src/catalog/index.js";
import { openStore, type Store } from "../../src/store/db.js";

let dir: string;
let db: Store | null = null;
afterEach(() => {
  db?.close();
  db = null;
  rmSync(dir, { recursive: true, force: true });
});

const ROWS: [tools: unknown, coverage: string, counted: number | null][] = [
  // as a gateway writes them
  [[{ name: "a" }, { name: "b" }], JSON.stringify({ duplicateNames: [] }), 2],
  [[{ name: "a" }, { name: "a" }, { name: "b" }], JSON.stringify({ duplicateNames: ["a"] }), 2],
  [
    [{ name: "a", description: "one" }, { name: "a", description: "two" }, { name: "b" }],
    JSON.stringify({ duplicateNames: ["a"], ambiguousNames: ["a"] }),
    1,
  ],
  // a name listed once beside an entry that could not be fingerprinted (not stored): ambiguous,
  // though no name is listed twice among the entries stored
  [
    [{ name: "a" }, { name: "b" }],
    JSON.stringify({
      duplicateNames: [],
      ambiguousNames: ["a"],
      unfingerprintable: [{ name: "a", entries: 1 }],
    }),
    1,
  ],
  // rewritten: a string among the entries, coverage that is no JSON or names of another shape
  [["abc", { name: "a" }, { name: "a" }, { name: "b" }], JSON.stringify({ duplicateNames: ["a"] }), 2],
  [[{ name: "a" }, { name: "a" }], "{", 2],
  [[{ name: "a" }, { name: "a" }], JSON.stringify({ duplicateNames: 5, ambiguousNames: "a" }), 2],
  [
    [{ name: "a" }, { name: "b" }],
    JSON.stringify({ duplicateNames: ["a"], ambiguousNames: ["a", "b", "c"] }),
    0,
  ],
  ["{", JSON.stringify({ duplicateNames: ["a"] }), null],
];

describe("a revision's tools as the lists count them", () => {
  it("are the tools it serves, and a rewritten row never fails the list", () => {
    dir = mkdtempSync(join(tmpdir(), "portcullis-served-count-"));
    db = openStore(dir);
    const insert = db.prepare(
      `INSERT INTO catalog_revisions (server_label, revision, fingerprint, tools_json, coverage_json, first_seen_at)
       VALUES ('shop', ?, ?, ?, ?, '2026-01-01T00:00:00.000Z')`,
    );
    ROWS.forEach(([tools, coverage], i) => {
      insert.run(i + 1, `sha256:${i}`, typeof tools === "string" ? tools : JSON.stringify(tools), coverage);
    });
    const counted = ROWS.map(([, , n]) => n);
    expect(listRevisions(db, "shop").map((r) => r.tools)).toEqual(counted);
    expect(latestRevisions(db, "shop", 50).revisions.map((r) => r.tools)).toEqual(counted);
  });
});
