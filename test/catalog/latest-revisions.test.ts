// The console's Catalog page draws a label's latest 50 revisions, and any process of the user can
// record thousands under a label. It read every one (each catalog's tools counted by SQLite, a
// large catalog's megabytes parsed) to keep 50. latestRevisions reads the 50 it returns, and counts
// the rest from the index. Shown here by revisions beyond the 50 whose stored bytes cannot be read
// at all (their overflow pages' chain broken in the file): reading every revision fails on them,
// reading the latest 50 does not touch them.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { latestRevisions, listRevisions } from "../../src/catalog/index.js";
import { openStore, type Store } from "../../src/store/db.js";

const MARKER = "unreadable-old-revision-";
let dir: string;
let db: Store | null = null;
afterEach(() => {
  db?.close();
  db = null;
  rmSync(dir, { recursive: true, force: true });
});

/** 300 revisions under "shop": the first 250 hold a catalog long enough to spill onto overflow pages. */
function recordRevisions(): void {
  const store = openStore(dir);
  const insert = store.prepare(
    `INSERT INTO catalog_revisions (server_label, revision, fingerprint, tools_json, coverage_json, first_seen_at)
     VALUES ('shop', ?, ?, ?, '{}', ?)`,
  );
  store.transaction(() => {
    for (let r = 1; r <= 300; r++)
      insert.run(
        r,
        `sha256:${r}`,
        r <= 250 ? JSON.stringify([MARKER.repeat(800)]) : JSON.stringify([{ name: `t${r}` }]),
        `2026-01-01T00:00:${String(r % 60).padStart(2, "0")}.000Z`,
      );
  })();
  store.close(); // checkpointed: every page is in the database file
}

/**
 * Breaks the overflow chains that hold the old catalogs: each overflow page (its first byte 0, the
 * top byte of the next page's number; a b-tree page starts with its type) holding the marker gets
 * a next page beyond the file. Returns how many were broken.
 */
function breakOverflowPages(file: string): number {
  const bytes = readFileSync(file);
  const pageSize = bytes.readUInt16BE(16);
  const marker = Buffer.from(MARKER);
  let broken = 0;
  const fd = openSync(file, "r+");
  try {
    for (let page = pageSize; page < bytes.length; page += pageSize) {
      const body = bytes.subarray(page, page + pageSize);
      if (body[0] !== 0 || body.indexOf(marker) < 0) continue;
      const next = Buffer.alloc(4);
      next.writeUInt32BE(0x7fff_fff0);
      writeSync(fd, next, 0, 4, page);
      broken++;
    }
  } finally {
    closeSync(fd);
  }
  return broken;
}

describe("a label's latest revisions", () => {
  it("are read without the older ones, which are only counted", () => {
    dir = mkdtempSync(join(tmpdir(), "portcullis-latest-revisions-"));
    recordRevisions();
    expect(breakOverflowPages(join(dir, "portcullis.db"))).toBeGreaterThan(0);
    db = openStore(dir);
    // every revision: the broken ones are read too, and the reading fails
    expect(() => listRevisions(db!, "shop")).toThrow(/malformed|corrupt/i);
    const { revisions, total } = latestRevisions(db, "shop", 50);
    expect(total).toBe(300);
    expect(revisions.map((r) => r.revision)).toEqual(Array.from({ length: 50 }, (_, i) => 251 + i));
    expect(revisions[0]).toEqual({
      revision: 251,
      fingerprint: "sha256:251",
      tools: 1,
      firstSeenAt: "2026-01-01T00:00:11.000Z",
    });
  });
});
