// Audit records as any process of the user can write them into the store with SQL: under a
// canonical header of its choosing, sealed to the keyring's audit public key (which it reads) or
// random bytes that open with nothing.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { encodeHeader, parseHeader, splitRecord } from "../../src/audit/record.js";
import { SealingSession } from "../../src/audit/seal.js";
import { x25519PublicKeyFromRaw } from "../../src/keyring/x25519.js";
import { openStore } from "../../src/store/db.js";

/** The human's gateway as its run's start record's header names it: its writer id and pid. */
export function gatewayOfRun(stateDir: string): { writer: string; pid: number } {
  const db = openStore(stateDir);
  try {
    for (const record of db
      .prepare("SELECT record FROM audit_records ORDER BY seq")
      .pluck()
      .all() as Buffer[]) {
      const header = parseHeader(splitRecord(record)!.header)!;
      if (header.type === "run_started") return { writer: header.writer, pid: header.pid };
    }
    throw new Error("no run_started in the log");
  } finally {
    db.close();
  }
}

interface Forged {
  type: string;
  writer?: string;
  pid?: number;
  /** sealed to the keyring's audit public key; without it, random bytes that open with nothing */
  event?: Record<string, unknown>;
}

/** The keyring's audit public key, as any process of the user reads it from keyring.json. */
interface AuditPublic {
  keyId: string;
  publicKey: ReturnType<typeof x25519PublicKeyFromRaw>;
}

function auditPublic(stateDir: string): AuditPublic {
  const keyring = JSON.parse(readFileSync(join(stateDir, "keyring.json"), "utf8")) as {
    audit: { keyId: string; publicKey: string };
  };
  return {
    keyId: keyring.audit.keyId,
    publicKey: x25519PublicKeyFromRaw(Buffer.from(keyring.audit.publicKey, "base64url")),
  };
}

/**
 * The bytes of a record of `type` at `seq` after `prev`, under a canonical header; sealed in a
 * writer session of its own, or in `shared`, a flood's (its next nonce).
 */
function forgedRecord(
  audit: AuditPublic,
  seq: number,
  prev: string,
  fields: Forged,
  shared?: SealingSession,
): Buffer {
  const session = shared ?? SealingSession.start(audit.publicKey);
  const nonce = session.nextNonce();
  const header = encodeHeader({
    v: 1,
    seq,
    prev,
    time: new Date().toISOString(),
    type: fields.type,
    writer: fields.writer ?? `01${"Z".repeat(24)}`,
    pid: fields.pid ?? process.pid,
    key: audit.keyId,
    epk: session.epk,
    nonce: nonce.toString("base64url"),
  });
  const record = fields.event
    ? session.sealRecord(nonce, header, Buffer.from(JSON.stringify({ type: fields.type, ...fields.event })))
    : Buffer.concat([Buffer.from(header, "latin1"), Buffer.from([0x0a]), randomBytes(96)]);
  if (!shared) session.close();
  return record;
}

/**
 * A record inserted at the head with SQL: chained to the head, or, `breaks`, with a `prev` that
 * holds no record. Returns its seq.
 */
export function appendForged(stateDir: string, fields: Forged & { breaks?: boolean }): number {
  const db = openStore(stateDir);
  try {
    // the head read and the row inserted in one write transaction: a gateway appending at the
    // same moment (a call's result is recorded after its answer is sent) comes before or after,
    // never between (the store refused the row: "appended at the head only", in a CI run)
    return db
      .transaction(() => {
        const head = headOf(db);
        const prev = fields.breaks
          ? randomBytes(32).toString("hex")
          : createHash("sha256").update(head.record).digest("hex");
        const seq = head.seq + 1;
        db.prepare("INSERT INTO audit_records (seq, record) VALUES (?, ?)").run(
          seq,
          forgedRecord(auditPublic(stateDir), seq, prev, fields),
        );
        return seq;
      })
      .immediate();
  } finally {
    db.close();
  }
}

/**
 * Records inserted at the head with SQL, each chained to the one before, in one transaction (a
 * flood, as any process of the user can append one). Returns their seqs. They are sealed in one
 * writer session (one key agreement to seal them, and one to open them), whatever writer id each
 * header gives: the console picks records by their headers, and what a session of its own for each
 * costs it to open is for bench/audit-page to measure, not for a test to wait on (a thousand
 * sessions took 3 s to seal on a loaded machine).
 */
export function appendForgedMany(stateDir: string, all: readonly Forged[]): number[] {
  // the keyring read once for the flood, and one session sealing all of it
  const audit = auditPublic(stateDir);
  const session = SealingSession.start(audit.publicKey);
  const db = openStore(stateDir);
  try {
    const insert = db.prepare("INSERT INTO audit_records (seq, record) VALUES (?, ?)");
    // (the head read inside the write transaction, as appendForged's)
    return db
      .transaction(() => {
        let { seq, record } = headOf(db);
        return all.map((fields) => {
          seq += 1;
          record = forgedRecord(
            audit,
            seq,
            createHash("sha256").update(record).digest("hex"),
            fields,
            session,
          );
          insert.run(seq, record);
          return seq;
        });
      })
      .immediate();
  } finally {
    session.close();
    db.close();
  }
}

/** The audit log's last row. */
function headOf(db: ReturnType<typeof openStore>): { seq: number; record: Buffer } {
  return db.prepare("SELECT seq, record FROM audit_records ORDER BY seq DESC LIMIT 1").get() as {
    seq: number;
    record: Buffer;
  };
}

/**
 * The record at `seq` replaced in place by another with the same place in the chain (its `prev`):
 * the store's trigger against updates dropped, the row rewritten, the trigger made again.
 */
export function rewriteRecord(stateDir: string, seq: number, fields: Forged): void {
  const db = openStore(stateDir);
  try {
    const old = db.prepare("SELECT record FROM audit_records WHERE seq = ?").pluck().get(seq) as Buffer;
    const prev = parseHeader(splitRecord(old)!.header)!.prev;
    const trigger = db
      .prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'audit_records_no_update'")
      .pluck()
      .get() as string;
    db.exec("DROP TRIGGER audit_records_no_update");
    db.prepare("UPDATE audit_records SET record = ? WHERE seq = ?").run(
      forgedRecord(auditPublic(stateDir), seq, prev, fields),
      seq,
    );
    db.exec(trigger);
  } finally {
    db.close();
  }
}

/**
 * `count` starts of runs `forged-<from>` … carrying the gateway's pid `pid` in their headers, each
 * under a writer id of its own, sealed to the audit key: each opens and names a run of its own.
 */
export function forgedStarts(pid: number, from: number, count: number): Forged[] {
  return Array.from({ length: count }, (_, k) => {
    const i = from + k;
    return {
      type: "run_started",
      writer: `01${"Z".repeat(20)}${String(i).padStart(4, "0")}`,
      pid,
      event: { run: `forged-${i}`, serverLabel: "shop" },
    };
  });
}
