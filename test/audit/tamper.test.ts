// Tampering with an exported log (and with the store itself): every change is detected, at the
// sequence number of the record that was changed.
import { copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  AuditLog,
  type Checkpoint,
  exportRecords,
  makeCheckpoint,
  storedRecords,
  type VerifyResult,
  verifyChain,
  verifyExport,
} from "../../src/audit/index.js";
import { openStore, type Store } from "../../src/store/db.js";
import { stateWithKeyring, tempDir } from "./helpers.js";

const event = (i: number) => ({
  type: "tool_called" as const,
  run: "01JQ7R1ZC2M7W1DXQ8Z2K9V4B6",
  serverLabel: "inventory-local",
  requestId: i,
  tool: i % 2 ? "inventory_lookup" : "inventory_adjust",
  epoch: "01JQ7R4S4S0QJ7GZP1S2X3Y4Z5",
  revision: 12,
});

async function logWith(n: number, from = 0): Promise<{ dir: string; db: Store; log: AuditLog }> {
  const dir = await stateWithKeyring();
  const db = openStore(dir);
  const log = AuditLog.open(db, dir);
  for (let i = 0; i < n; i++) log.append(event(from + i));
  return { dir, db, log };
}

const verify = (lines: string[], checkpoint?: Checkpoint): VerifyResult =>
  verifyExport([...lines, ""], { checkpoint });
const failsAt = (r: VerifyResult) => (r.ok ? `ok (${r.records} records)` : r.seq);

describe("tampering with an export of 10 records", () => {
  let lines: string[];
  let checkpoint: Checkpoint;
  let other: string[];

  beforeAll(async () => {
    const a = await logWith(10);
    lines = [...exportRecords(a.db)];
    checkpoint = makeCheckpoint(a.db);
    a.db.close();
    const b = await logWith(10, 100);
    other = [...exportRecords(b.db)];
    b.db.close();
  });

  it("verifies untouched, with and without its checkpoint", () => {
    expect(verify(lines)).toMatchObject({ ok: true, records: 10, head: { seq: 10, hash: checkpoint.hash } });
    expect(verify(lines, checkpoint)).toMatchObject({ ok: true, checkpoint: { seq: 10 } });
    expect(checkpoint.seq).toBe(10);
  });

  it("detects every single-byte change at every position, at that record's seq", () => {
    const text = Buffer.from(`${lines.join("\n")}\n`);
    const lineOf: number[] = [];
    let line = 1;
    for (const b of text) {
      lineOf.push(line);
      if (b === 0x0a) line++;
    }
    let tried = 0;
    for (let p = 0; p < text.length; p++) {
      for (const mask of [0x01, 0x20, 0x80]) {
        const copy = Buffer.from(text);
        copy[p]! ^= mask;
        const r = verifyExport(copy.toString("utf8").split("\n"));
        tried++;
        if (r.ok || r.seq !== lineOf[p]) {
          throw new Error(`byte ${p} ^ 0x${mask.toString(16)} (line ${lineOf[p]}): ${JSON.stringify(r)}`);
        }
      }
    }
    expect(tried).toBe(text.length * 3);
    expect(text.length).toBeGreaterThan(5000);
  });

  it("detects a deleted record at its seq (a deleted last record only against the checkpoint)", () => {
    for (let k = 1; k <= 9; k++) {
      const r = verify(lines.filter((_, i) => i !== k - 1));
      expect(failsAt(r), `delete ${k}`).toBe(k);
      if (!r.ok) expect(r.problem).toMatch(/missing/);
    }
    expect(verify(lines.slice(0, 9))).toMatchObject({ ok: true, records: 9 });
    expect(failsAt(verify(lines.slice(0, 9), checkpoint))).toBe(10);
  });

  it("detects inserted records at the position they were put in", () => {
    for (let k = 1; k <= 10; k++) {
      // Another log's record k, which has the right seq: its prev gives it away — except
      // for a first record, which is a perfectly good start: the original seq 1 then repeats.
      const foreign = [...lines.slice(0, k - 1), other[k - 1]!, ...lines.slice(k - 1)];
      expect(failsAt(verify(foreign)), `foreign record at ${k}`).toBe(k === 1 ? 2 : k);
      const copy = [...lines.slice(0, k - 1), lines[(k + 3) % 10]!, ...lines.slice(k - 1)];
      expect(failsAt(verify(copy)), `copy of ${((k + 3) % 10) + 1} at ${k}`).toBe(k);
    }
    expect(failsAt(verify([...lines, other[9]!]))).toBe(11);
  });

  it("detects a duplicated record right after the original", () => {
    for (let k = 1; k <= 10; k++) {
      const r = verify([...lines.slice(0, k), lines[k - 1]!, ...lines.slice(k)]);
      expect(failsAt(r), `duplicate ${k}`).toBe(k + 1);
      if (!r.ok) expect(r.problem).toMatch(/repeated or reordered/);
    }
  });

  it("detects swapped records at the first of the two", () => {
    for (let k = 1; k <= 9; k++) {
      const swapped = [...lines];
      [swapped[k - 1], swapped[k]] = [swapped[k]!, swapped[k - 1]!];
      const r = verify(swapped);
      expect(failsAt(r), `swap ${k},${k + 1}`).toBe(k);
      if (!r.ok) expect(r.problem).toBe(`records out of order: seq ${k + 1} comes before seq ${k}`);
    }
    expect(failsAt(verify([...lines].reverse()))).toBe(1);
  });

  it("detects a record from another log, or a log that is another log entirely, against the checkpoint", () => {
    expect(verify(other)).toMatchObject({ ok: true, records: 10 });
    expect(failsAt(verify(other, checkpoint))).toBe(10);
    expect(failsAt(verify(lines, { ...checkpoint, seq: 5 }))).toBe(5);
  });

  it("detects a truncated tail against an earlier checkpoint; an old checkpoint never validates a shorter log", () => {
    for (let keep = 0; keep < 10; keep++) {
      const r = verify(lines.slice(0, keep), checkpoint);
      expect(failsAt(r), `keep ${keep}`).toBe(keep + 1);
      if (!r.ok) expect(r.problem).toMatch(/cut off/);
      expect(verify(lines.slice(0, keep))).toMatchObject({ ok: true, records: keep });
    }
  });

  it("refuses a blank line in the middle, or text after the last newline", () => {
    expect(failsAt(verifyExport([...lines.slice(0, 4), "", ...lines.slice(4), ""]))).toBe(5);
    expect(failsAt(verifyExport([...lines, "x"]))).toBe(11);
    expect(verifyExport([...lines])).toMatchObject({ ok: true, records: 10 }); // no final newline: fine
  });
});

describe("a rewritten suffix", () => {
  it("verifies on its own but not against a checkpoint taken before the rewrite", async () => {
    const { dir, db, log } = await logWith(6);
    const copyDir = tempDir();
    db.pragma("wal_checkpoint(TRUNCATE)");
    copyFileSync(join(dir, "portcullis.db"), join(copyDir, "portcullis.db"));
    copyFileSync(join(dir, "keyring.json"), join(copyDir, "keyring.json"));
    expect(existsSync(join(dir, "portcullis.db-wal"))).toBe(true);
    for (let i = 6; i < 10; i++) log.append(event(i));
    const checkpoint10 = makeCheckpoint(db);
    const records = [...exportRecords(db)];
    db.close();

    // The rewrite: the same first six records, then other events, recomputed consistently.
    const forged = openStore(copyDir);
    const forger = AuditLog.open(forged, copyDir);
    for (let i = 0; i < 6; i++) forger.append({ ...event(i), tool: "something_else" });
    const rewritten = [...exportRecords(forged)];
    expect(verifyChain(storedRecords(forged))).toMatchObject({ ok: true, records: 12 });
    expect(rewritten.slice(0, 6)).toEqual(records.slice(0, 6));

    const r = verify(rewritten.slice(0, 10), checkpoint10);
    expect(failsAt(r)).toBe(10);
    if (!r.ok) expect(r.problem).toMatch(/differs from the checkpoint/);
    expect(failsAt(verify(rewritten, checkpoint10))).toBe(10); // longer than the original: still caught
    expect(failsAt(verifyChain(storedRecords(forged), { checkpoint: checkpoint10 }))).toBe(10);
    const cp8: Checkpoint = { ...checkpoint10, seq: 8, hash: JSON.parse(records[7]!).hash };
    expect(verify(records, cp8)).toMatchObject({ ok: true });
    expect(failsAt(verify(rewritten, cp8))).toBe(8);
    forged.close();
  });
});

describe("tampering with the store", () => {
  it("refuses update, delete and out-of-place insert through SQL (bugs, not attackers)", async () => {
    const { db } = await logWith(3);
    expect(() => db.prepare("UPDATE audit_records SET record = x'00' WHERE seq = 2").run()).toThrow(
      /append-only/,
    );
    expect(() => db.prepare("DELETE FROM audit_records WHERE seq = 3").run()).toThrow(/append-only/);
    expect(() => db.prepare("INSERT INTO audit_records (seq, record) VALUES (5, x'00')").run()).toThrow(
      /head only/,
    );
    expect(() => db.prepare("INSERT INTO audit_records (seq, record) VALUES (3, x'00')").run()).toThrow();
    expect(verifyChain(storedRecords(db))).toMatchObject({ ok: true, records: 3 });
    db.close();
  });

  it("detects altered, deleted and reordered rows by someone who drops the triggers", async () => {
    const { db } = await logWith(8);
    const original = [...storedRecords(db)].map((b) => Buffer.from(b));
    db.exec("DROP TRIGGER audit_records_no_update; DROP TRIGGER audit_records_no_delete;");
    const restore = () => {
      db.exec("DELETE FROM audit_records");
      const ins = db.prepare("INSERT INTO audit_records (seq, record) VALUES (?, ?)");
      for (const [i, r] of original.entries()) ins.run(i + 1, r);
      expect(verifyChain(storedRecords(db))).toMatchObject({ ok: true, records: 8 });
    };
    db.exec("DROP TRIGGER audit_records_extend_only");
    // A byte of the sealed payload of record 4: shows at 5, whose prev no longer matches.
    const altered = Buffer.from(original[3]!);
    altered[altered.length - 1]! ^= 1;
    db.prepare("UPDATE audit_records SET record = ? WHERE seq = 4").run(altered);
    expect(verifyChain(storedRecords(db))).toMatchObject({ ok: false, seq: 5 });
    restore();
    // A byte of the header of record 4 (its time): the header no longer links, or is not canonical.
    const header = Buffer.from(original[3]!);
    header[header.indexOf('"time":"') + 10]! ^= 1;
    db.prepare("UPDATE audit_records SET record = ? WHERE seq = 4").run(header);
    expect(verifyChain(storedRecords(db))).toMatchObject({ ok: false, seq: 5 });
    restore();
    db.prepare("DELETE FROM audit_records WHERE seq = 3").run();
    expect(verifyChain(storedRecords(db))).toMatchObject({ ok: false, seq: 3 });
    restore();
    db.prepare("UPDATE audit_records SET record = ? WHERE seq = 2").run(original[2]!);
    db.prepare("UPDATE audit_records SET record = ? WHERE seq = 3").run(original[1]!);
    expect(verifyChain(storedRecords(db))).toMatchObject({ ok: false, seq: 2 });
    restore();
    db.close();
  });
});
