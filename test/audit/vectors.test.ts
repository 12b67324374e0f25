// The test vectors of docs/audit-format.md, read from the document itself, recomputed with
// the code: the document and the implementation cannot drift apart. Their export lines are also
// given to the built `portcullis audit verify --file` as a real process, which is what a reviewer
// handed an export runs.
import { diffieHellman } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import canonicalize from "canonicalize";
import { describe, expect, it } from "vitest";
import {
  type AuditEvent,
  type AuditHeader,
  GENESIS_PREV,
  verifyChain,
  verifyExport,
} from "../../src/audit/index.js";
import {
  encodeHeader,
  exportLine,
  parseExportLine,
  parseHeader,
  recordBytes,
  recordHash,
} from "../../src/audit/record.js";
import {
  deriveRecordKey,
  HKDF_INFO,
  RecordOpener,
  SealingSession,
  sealRecord,
} from "../../src/audit/seal.js";
import {
  auditKeyId,
  rawX25519PublicKey,
  x25519PrivateKeyFromRaw,
  x25519PublicKeyFromRaw,
} from "../../src/keyring/x25519.js";
import { runCli } from "../helpers/gateway.js";
import { REPO, tempDir } from "./helpers.js";

interface Vectors {
  recipientPrivateKey: string;
  recipientPublicKey: string;
  keyId: string;
  ephemeralPrivateKey: string;
  ephemeralPublicKey: string;
  sharedSecret: string;
  hkdfSalt: string;
  hkdfInfo: string;
  recordKey: string;
  records: {
    nonce: string;
    header: AuditHeader;
    headerText: string;
    event: AuditEvent;
    plaintext: string;
    sealed: string;
    hash: string;
    exportLine: string;
  }[];
}

function vectorsFromDoc(): Vectors {
  const doc = readFileSync(join(REPO, "docs", "audit-format.md"), "utf8");
  const m =
    /<!-- audit-test-vectors:begin -->\s*```json\n([\s\S]*?)```\s*<!-- audit-test-vectors:end -->/.exec(doc);
  if (!m) throw new Error("docs/audit-format.md has no test-vector block");
  return JSON.parse(m[1]!) as Vectors;
}

const hex = (s: string) => Buffer.from(s, "hex");

describe("docs/audit-format.md test vectors", () => {
  const v = vectorsFromDoc();
  const recipientPrivate = x25519PrivateKeyFromRaw(hex(v.recipientPrivateKey));
  const recipientPublic = x25519PublicKeyFromRaw(hex(v.recipientPublicKey));
  const ephemeralPrivate = x25519PrivateKeyFromRaw(hex(v.ephemeralPrivateKey));

  it("has two chained records", () => {
    expect(v.records).toHaveLength(2);
    expect(v.records[0]!.header.prev).toBe(GENESIS_PREV);
    expect(v.records[1]!.header.prev).toBe(v.records[0]!.hash);
  });

  it("derives the keys, the key id and the record key", () => {
    expect(rawX25519PublicKey(recipientPrivate).toString("hex")).toBe(v.recipientPublicKey);
    expect(rawX25519PublicKey(ephemeralPrivate).toString("hex")).toBe(v.ephemeralPublicKey);
    expect(auditKeyId(hex(v.recipientPublicKey))).toBe(v.keyId);
    const shared = diffieHellman({ privateKey: ephemeralPrivate, publicKey: recipientPublic });
    expect(shared.toString("hex")).toBe(v.sharedSecret);
    expect(HKDF_INFO.toString("utf8")).toBe(v.hkdfInfo);
    expect(v.hkdfSalt).toBe(v.ephemeralPublicKey + v.recipientPublicKey);
    expect(
      deriveRecordKey(shared, hex(v.ephemeralPublicKey), hex(v.recipientPublicKey)).toString("hex"),
    ).toBe(v.recordKey);
  });

  it("encodes each header, seals each event and hashes each record as documented", () => {
    const session = SealingSession.start(recipientPublic, ephemeralPrivate);
    for (const r of v.records) {
      expect(encodeHeader(r.header)).toBe(r.headerText);
      expect(canonicalize(r.header)).toBe(r.headerText);
      expect(parseHeader(r.headerText)).toEqual(r.header);
      expect(r.header.epk).toBe(session.epk);
      expect(r.header.key).toBe(v.keyId);
      expect(JSON.stringify(r.event)).toBe(r.plaintext);
      const nonce = session.nextNonce();
      expect(nonce.toString("hex")).toBe(r.nonce);
      // the header carries that same nonce, base64url (what a reader opens the record with)
      expect(r.header.nonce).toBe(nonce.toString("base64url"));
      const record = session.sealRecord(nonce, r.headerText, Buffer.from(r.plaintext));
      expect(record).toEqual(recordBytes(r.headerText, hex(r.sealed)));
      expect(sealRecord(hex(v.recordKey), hex(r.nonce), r.headerText, Buffer.from(r.plaintext))).toEqual(
        record,
      );
      expect(recordHash(record)).toBe(r.hash);
      expect(exportLine(record)).toBe(r.exportLine);
    }
  });

  it("opens each record with the recipient's private key", () => {
    const opener = new RecordOpener(recipientPrivate);
    for (const r of v.records) {
      const plain = opener.open(r.header.epk, r.header.nonce, r.headerText, hex(r.sealed));
      expect(JSON.parse(plain.toString("utf8"))).toEqual(r.event);
    }
  });

  it("verifies as a chain, from the store form and from the export form", () => {
    const records = v.records.map((r) => recordBytes(r.headerText, hex(r.sealed)));
    const head = { seq: 2, hash: v.records[1]!.hash };
    expect(verifyChain(records)).toEqual({ ok: true, records: 2, head });
    expect(verifyExport([...v.records.map((r) => r.exportLine), ""])).toEqual({ ok: true, records: 2, head });
    const parsed = parseExportLine(v.records[0]!.exportLine);
    expect(typeof parsed === "string" ? parsed : parsed.hash).toBe(v.records[0]!.hash);
  });
});

describe("docs/audit-format.md test vectors, through the built CLI", () => {
  const v = vectorsFromDoc();
  const lines = v.records.map((r) => r.exportLine);
  const head = v.records[1]!;
  const dir = tempDir();
  const exportFile = (name: string, text: string) => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  };
  const checkpoint = exportFile(
    "checkpoint.json",
    JSON.stringify({
      format: "portcullis-audit-checkpoint/1",
      seq: head.header.seq,
      hash: head.hash,
      time: head.header.time,
      key: v.keyId,
    }),
  );
  // verifying an export reads no state directory: one that does not exist is never looked at
  const verify = (args: string[]) =>
    runCli(["audit", "verify", "--json", ...args], { stateDir: join(dir, "no-state-here") });

  it("verifies the two records, and the checkpoint of their head covers it", async () => {
    const file = exportFile("vectors.jsonl", `${lines.join("\n")}\n`);
    const r = await verify(["--file", file, "--checkpoint", checkpoint]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      ok: true,
      records: 2,
      head: { seq: 2, hash: head.hash },
      checkpoint: { seq: 2, hash: head.hash },
      headCovered: true,
    });
  });

  it("says how to cover the head with a checkpoint of the export's own store, never of this state directory", async () => {
    // the state directory this command runs with (PORTCULLIS_HOME here) is not where the export came
    // from: a checkpoint saved there would cover another log, so the advice names none
    const file = exportFile("advice.jsonl", `${lines.join("\n")}\n`);
    const stateDir = join(dir, "no-state-here");
    const advice = `a checkpoint of the store this export was made from, saved where that store is with 'portcullis audit checkpoint > CHECKPOINT' and kept where its owner cannot rewrite it, is checked with 'portcullis audit verify --file ${file} --checkpoint CHECKPOINT'`;
    const bare = await runCli(["audit", "verify", "--file", file], { stateDir });
    expect(bare.code).toBe(0);
    expect(bare.stdout).toBe(
      `audit chain ok: 2 records, head seq 2 hash ${head.hash}; record 1 is held by the record after it, the head is covered only by a checkpoint (none given: ${advice})\n`,
    );
    const first = exportFile(
      "first.json",
      JSON.stringify({
        format: "portcullis-audit-checkpoint/1",
        seq: 1,
        hash: v.records[0]!.hash,
        time: "t",
      }),
    );
    const short = await runCli(["audit", "verify", "--file", file, "--checkpoint", first], { stateDir });
    expect(short.code).toBe(0);
    expect(short.stdout).toContain(`(this one stops at seq 1: ${advice})`);
    expect(`${bare.stdout}${short.stdout}`).not.toContain(stateDir);
  });

  it("fails at seq 1 when the two are swapped, and against the checkpoint when the head is cut", async () => {
    const swapped = await verify([
      "--file",
      exportFile("swapped.jsonl", `${[lines[1], lines[0]].join("\n")}\n`),
    ]);
    expect(swapped.code).toBe(1);
    expect(JSON.parse(swapped.stdout)).toMatchObject({ ok: false, seq: 1 });
    const cut = exportFile("cut.jsonl", `${lines[0]}\n`);
    expect((await verify(["--file", cut])).code).toBe(0);
    const against = await verify(["--file", cut, "--checkpoint", checkpoint]);
    expect(against.code).toBe(1);
    expect(JSON.parse(against.stdout)).toMatchObject({ ok: false, seq: 2 });
  });
});
