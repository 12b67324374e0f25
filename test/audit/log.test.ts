import { describe, expect, it } from "vitest";
import { AuditLog, openRecords, storedRecords, verifyChain, verifyStore } from "../../src/audit/index.js";
import { headerOf, parseHeader } from "../../src/audit/record.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { PASSPHRASE, stateWithKeyring, tempDir } from "./helpers.js";

const called = (i: number) => ({ type: "tool_called" as const, requestId: i, tool: "t" });

describe("AuditLog", () => {
  it("will not open without a keyring, and says to run `portcullis init`", () => {
    const dir = tempDir();
    const db = openStore(dir);
    expect(() => AuditLog.open(db, dir)).toThrow(
      `there is no keyring in ${dir}; set it up first with: portcullis init --state-dir ${dir}`,
    );
    db.close();
  });

  it("returns the seq and hash of each durable append, the head verify reports", async () => {
    const dir = await stateWithKeyring();
    const db = openStore(dir);
    const log = AuditLog.open(db, dir);
    const a = log.append(called(1));
    const [b, c] = log.appendMany([called(2), called(3)]);
    expect([a.seq, b!.seq, c!.seq]).toEqual([1, 2, 3]);
    expect(verifyChain(storedRecords(db))).toEqual({ ok: true, records: 3, head: c });
    expect(log.appendMany([])).toEqual([]);
    expect(db.pragma("synchronous", { simple: true })).toBe(2);
    db.close();
  });

  it("a relaxed append commits with synchronous NORMAL, the first one included, and full sync is back after", async () => {
    // (a prepared PRAGMA acts when compiled: prepared at the log's open, the first relaxed commit was a full one)
    const dir = await stateWithKeyring();
    const db = openStore(dir);
    const log = AuditLog.open(db, dir);
    const inside: unknown[] = [];
    const level = () => {
      inside.push(db.pragma("synchronous", { simple: true }));
      return true;
    };
    for (let i = 0; i < 3; i++) log.appendIf([{ event: called(i), condition: level }], { relaxed: true });
    log.appendIf([{ event: called(9), condition: level }]);
    // NORMAL is 1, FULL 2
    expect(inside).toEqual([1, 1, 1, 2]);
    expect(db.pragma("synchronous", { simple: true })).toBe(2);
    db.close();
  });

  it("a relaxed append with a bounded wait (a gateway's group) commits with synchronous NORMAL and the lowered busy timeout, both put back after, a throwing condition included", async () => {
    // a gateway's groups take this path: the audit sink bounds their wait for another process's lock
    const dir = await stateWithKeyring();
    const db = openStore(dir);
    const log = AuditLog.open(db, dir);
    db.pragma("busy_timeout = 600000");
    const inside: unknown[][] = [];
    const settings = () => [
      db.pragma("synchronous", { simple: true }),
      db.pragma("busy_timeout", { simple: true }),
    ];
    const level = () => {
      inside.push(settings());
      return true;
    };
    for (let i = 0; i < 2; i++)
      log.appendIf([{ event: called(i), condition: level }], { relaxed: true, waitMs: 100 });
    // not relaxed, the same bound: full sync, the lowered timeout
    log.appendIf([{ event: called(5), condition: level }], { waitMs: 100 });
    // the connection's timeout already as low (a gateway's end): left alone, the sync still relaxed
    db.pragma("busy_timeout = 20");
    log.appendIf([{ event: called(6), condition: level }], { relaxed: true, waitMs: 100 });
    expect(settings()).toEqual([2, 20]);
    db.pragma("busy_timeout = 600000");
    expect(() =>
      log.appendIf(
        [
          {
            event: called(7),
            condition: () => {
              level();
              throw new Error("the condition failed");
            },
          },
        ],
        { relaxed: true, waitMs: 100 },
      ),
    ).toThrow("the condition failed");
    // NORMAL is 1, FULL 2
    expect(inside).toEqual([
      [1, 100],
      [1, 100],
      [2, 100],
      [1, 20],
      [1, 100],
    ]);
    expect(settings()).toEqual([2, 600000]);
    db.close();
  });

  it("writes an event with a condition only if it holds when its turn comes, under the write lock", async () => {
    const dir = await stateWithKeyring();
    const db = openStore(dir);
    const log = AuditLog.open(db, dir);
    const seen: boolean[] = [];
    const holds = (v: boolean) => () => {
      seen.push(db.inTransaction);
      return v;
    };
    const [a, b, c] = log.appendIf([
      { event: called(1) },
      { event: called(2), condition: holds(false) },
      { event: called(3), condition: holds(true) },
    ]);
    expect(b).toBeNull();
    expect([a?.seq, c?.seq]).toEqual([1, 2]);
    expect(seen).toEqual([true, true]);
    expect(verifyStore(db)).toEqual({ ok: true, records: 2, head: c });
    expect(log.appendIf([{ event: called(4), condition: holds(false) }])).toEqual([null]);
    // a condition that cannot be read fails the whole group, and nothing of it is written
    const broken = () => {
      throw new Error("the store is gone");
    };
    expect(() => log.appendIf([{ event: called(6) }, { event: called(7), condition: broken }])).toThrow(
      /the store is gone/,
    );
    expect(log.append(called(5)).seq).toBe(3);
    expect(verifyStore(db)).toMatchObject({ ok: true, records: 3 });
    db.close();
  });

  it("writes a group larger than one insert statement in order, skipped conditions leaving no gap", async () => {
    const dir = await stateWithKeyring();
    const db = openStore(dir);
    const log = AuditLog.open(db, dir);
    log.append(called(0));
    // 37 events, one in 5 refused by its condition: 29 records over more than one multi-row INSERT
    const group = Array.from({ length: 37 }, (_, i) => ({
      event: called(i + 1),
      condition: () => (i + 1) % 5 !== 0,
    }));
    const appended = log.appendIf(group);
    const written = appended.filter((a) => a !== null);
    expect(appended.map((a) => a === null)).toEqual(group.map((g) => !g.condition()));
    expect(written.map((a) => a.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 2));
    expect(verifyStore(db)).toEqual({ ok: true, records: 31, head: written.at(-1) });
    const { auditPrivateKey } = await unlockKeyring(dir, PASSPHRASE);
    const opened = [...openRecords(db, auditPrivateKey)];
    expect(opened.map((r) => r.event.requestId)).toEqual(
      Array.from({ length: 38 }, (_, i) => i).filter((i) => i === 0 || i % 5 !== 0),
    );
    expect(opened.slice(1).map((r) => ({ seq: r.seq, hash: r.hash }))).toEqual(written);
    db.close();
  });

  it("writes nothing of a batch with one refused event", async () => {
    const dir = await stateWithKeyring();
    const db = openStore(dir);
    const log = AuditLog.open(db, dir);
    log.append(called(1));
    expect(() => log.appendMany([called(2), { type: "credential_injected", token: "abc" }])).toThrow(
      /never written/,
    );
    expect(() => log.append({ type: "nope" } as never)).toThrow(/unknown audit event type/);
    expect(verifyChain(storedRecords(db))).toMatchObject({ ok: true, records: 1 });
    db.close();
  });

  it("keeps one chain when writers take turns, and after a transaction that failed", async () => {
    const dir = await stateWithKeyring();
    const db = openStore(dir);
    const one = AuditLog.open(db, dir);
    const two = AuditLog.open(openStore(dir), dir); // another connection, as another process has
    one.append(called(1));
    two.append(called(2));
    one.append(called(3));
    one.append(called(4));
    // A failure inside the transaction (after the record was built): nothing is kept, and
    // `one` must not take its unwritten record for the head.
    db.exec(
      "CREATE TABLE fail_next (x); CREATE TEMP TRIGGER injected BEFORE INSERT ON main.audit_records WHEN EXISTS (SELECT 1 FROM fail_next) BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
    );
    db.exec("INSERT INTO fail_next VALUES (1)");
    expect(() => one.append(called(5))).toThrow(/injected failure/);
    db.exec("DELETE FROM fail_next");
    two.append(called(6));
    one.append(called(7));
    expect(verifyChain(storedRecords(db))).toMatchObject({ ok: true, records: 6 });
    const { auditPrivateKey } = await unlockKeyring(dir, PASSPHRASE);
    expect([...openRecords(db, auditPrivateKey)].map((r) => r.event.requestId)).toEqual([1, 2, 3, 4, 6, 7]);
    db.close();
  });

  it("makes a new ephemeral key every recordsPerSession records, each nonce used once", async () => {
    const dir = await stateWithKeyring();
    const db = openStore(dir);
    const log = AuditLog.open(db, dir, { recordsPerSession: 3 });
    for (let i = 0; i < 7; i++) log.append(called(i));
    const headers = [...storedRecords(db)].map((r) => parseHeader(headerOf(r)!)!);
    const epks = headers.map((h) => h.epk);
    expect(new Set(epks).size).toBe(3);
    expect(epks[0]).toBe(epks[2]);
    expect(epks[2]).not.toBe(epks[3]);
    expect(new Set(headers.map((h) => `${h.epk}/${h.nonce}`)).size).toBe(7);
    const { auditPrivateKey } = await unlockKeyring(dir, PASSPHRASE);
    expect([...openRecords(db, auditPrivateKey)]).toHaveLength(7);
    db.close();
  });

  it("refuses to open records sealed to another key, or altered", async () => {
    const dir = await stateWithKeyring();
    const other = await stateWithKeyring();
    const db = openStore(dir);
    AuditLog.open(db, dir).append(called(1));
    const { auditPrivateKey } = await unlockKeyring(other, PASSPHRASE);
    expect(() => [...openRecords(db, auditPrivateKey)]).toThrow(
      /sealed to audit key [0-9a-f]{32}, not to this keyring's/,
    );
    const mine = (await unlockKeyring(dir, PASSPHRASE)).auditPrivateKey;
    const altered = Buffer.from([...storedRecords(db)][0]!);
    altered[altered.length - 20]! ^= 1;
    expect(() => [...openRecords(db, mine, [altered])]).toThrow(/record 1 does not open with the audit key/);
    db.close();
  });
});

describe("reading the stored chain", () => {
  it("reads records in chunks, byte for byte, and leaves a gap, a reordering or a non-blob for the verifier", async () => {
    const dir = await stateWithKeyring();
    const db = openStore(dir);
    const log = AuditLog.open(db, dir, { sync: "normal" });
    const batch = Array.from({ length: 250 }, (_, i) => called(i));
    for (let i = 0; i < 10; i++) log.appendMany(batch); // 2,500 records: three chunks
    // Records of a few MiB (a catalog_revised event holds a whole inventory): chunks shrink for them.
    const big = "x".repeat(3 << 20);
    for (let i = 0; i < 4; i++) log.append({ type: "catalog_revised", inventory: [big] });
    log.appendMany(batch.slice(0, 10));
    const oneByOne = db.prepare("SELECT record FROM audit_records ORDER BY seq").pluck().all() as Buffer[];
    const read = [...storedRecords(db)];
    expect(read).toHaveLength(2514);
    expect(read.every((r, i) => Buffer.compare(r, oneByOne[i]!) === 0)).toBe(true);
    expect(verifyStore(db)).toMatchObject({ ok: true, records: 2514 });
    expect(verifyChain(read)).toEqual(verifyStore(db));

    // What a tamperer with write access to the file could do, the triggers dropped first.
    db.exec(
      "DROP TRIGGER audit_records_no_delete; DROP TRIGGER audit_records_no_update; DROP TRIGGER audit_records_extend_only;",
    );
    db.prepare("DELETE FROM audit_records WHERE seq = 1025").run(); // the first of the second chunk
    expect(verifyStore(db)).toMatchObject({
      ok: false,
      seq: 1025,
      problem: expect.stringMatching(/record 1025 is missing/),
    });
    db.prepare("INSERT INTO audit_records (seq, record) VALUES (1025, ?)").run("text, not a blob: é");
    expect(verifyStore(db)).toMatchObject({
      ok: false,
      seq: 1025,
      problem: expect.stringMatching(/not a canonical v1 header/),
    });
    db.prepare("UPDATE audit_records SET record = ? WHERE seq = 1025").run(oneByOne[1024]);
    expect(verifyStore(db)).toMatchObject({ ok: true, records: 2514 });
    db.prepare("UPDATE audit_records SET record = ? WHERE seq = 2048").run(oneByOne[2046]); // seq 2047 again
    expect(verifyStore(db)).toMatchObject({
      ok: false,
      seq: 2048,
      problem: expect.stringMatching(/found seq 2047 where seq 2048/),
    });
    db.close();
  });
});
