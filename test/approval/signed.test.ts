// Signed decisions inside one process, on a real store: the epoch of a signed grant edited by SQL,
// the approver key's pin in the audit chain, and a later pin that is ignored.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { PIN_QUERY, PinTracker, writePin } from "../../src/approval/pin.js";
import { PIN_ROWS_AND_HEAD } from "../../src/approval/pinChain.js";
import { IS_PIN_RECORD } from "../../src/approval/pinSchema.js";
import { DecisionVerifier } from "../../src/approval/trust.js";
import { mintSigner } from "../../src/keyring/approver.js";
import { loadPublicKeyring, unlockKeyring } from "../../src/keyring/keyring.js";
import type { Store } from "../../src/store/db.js";
import {
  callOf,
  makeAuthorizer,
  PASSPHRASE,
  pendingOf,
  publishPreview,
  sessionGranted,
  signer,
  twoConnectionsPerTest,
} from "./helpers.js";

const A = "01JQ7R4S4S0QJ7GZP1S2AAAAAA";
const B = "01JQ7R9KQ6K2Y8W4JH0MBBBBBB";

let dir: string;
let db: Store;
let other: Store;
twoConnectionsPerTest("portcullis-signed-", (s) => {
  ({ dir, db, other } = s);
});

describe("a signed grant", () => {
  it("whose epoch was edited by SQL to the current one covers nothing: the call asks a human", async () => {
    const { run, grant } = await sessionGranted(db, other, A);
    other.prepare("UPDATE grants SET execution_epoch = ? WHERE grant_id = ?").run(B, grant.grant);
    const { auth, rec } = makeAuthorizer(db, run);
    const call = callOf(publishPreview, B);
    expect(auth.stale(call)).toBeNull();
    const asked = auth.obtain(call);
    const req = await pendingOf(other, run);
    expect(req.executionEpoch).toBe(B);
    expect(rec.events).toContainEqual(
      expect.objectContaining({
        type: "decision_rejected",
        what: "grant",
        grant: grant.grant,
        why: "its signature does not verify against the pinned approver key",
      }),
    );
    other.prepare("UPDATE approval_requests SET state = 'cancelled' WHERE request = ?").run(req.request);
    expect("error" in (await asked)).toBe(true);
  });
});

describe("the approver key pin", () => {
  it("is the first pin in the chain; the keyring's key matches it, another key does not", async () => {
    const keyring = loadPublicKeyring(dir)!;
    const pins = new PinTracker(db);
    expect(pins.status(signer().publicKeyRaw, keyring.publicKey)).toMatchObject({ state: "match", seq: 1 });
    // a later pin of another key (as a same-user writer could append) is ignored
    const intruder = mintSigner(randomBytes(32));
    writePin(db, dir, intruder, "intruder");
    const fresh = new PinTracker(db);
    expect(fresh.status(intruder.publicKeyRaw, keyring.publicKey)).toMatchObject({ state: "other", seq: 1 });
    expect(fresh.status(signer().publicKeyRaw, keyring.publicKey)).toMatchObject({ state: "match" });
    expect(fresh.ignored).toEqual([2]);
    // a gateway's verifier trusts the first and reports the later one
    const reported: number[][] = [];
    const verifier = new DecisionVerifier(db, dir, (seqs) => reported.push([...seqs]));
    expect(verifier.trusted().ok).toBe(true);
    expect(reported).toEqual([[2]]);
    // the keyring opens with the passphrase and holds the same approver key
    const unlocked = await unlockKeyring(dir, PASSPHRASE);
    expect(unlocked.signer!.keyId).toBe(signer().keyId);
    expect(keyring.approver!.keyId).toBe(signer().keyId);
  });

  it("is found through the partial index of pin records, not by reading every record; the first still wins", () => {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${PIN_QUERY}`).all(0) as { detail: string }[])
      .map((r) => r.detail)
      .join("; ");
    expect(plan).toContain("audit_records_pins");
    // and so is each look of a PinChain, the head read in the same statement
    const chainPlan = (
      db.prepare(`EXPLAIN QUERY PLAN ${PIN_ROWS_AND_HEAD}`).all(0) as { detail: string }[]
    ).map((r) => r.detail);
    expect(chainPlan.join("; ")).toContain("audit_records_pins");
    expect(chainPlan.filter((d) => d.startsWith("SCAN audit_records"))).toEqual([]);
    const keyring = loadPublicKeyring(dir)!;
    const intruder = mintSigner(randomBytes(32));
    writePin(db, dir, intruder, "intruder");
    // the index holds the pins and nothing else
    const indexed = db
      .prepare(
        "SELECT seq FROM audit_records INDEXED BY audit_records_pins WHERE seq > 0 AND " + IS_PIN_RECORD,
      )
      .pluck()
      .all();
    expect(indexed).toEqual([1, 2]);
    expect(new PinTracker(db).status(signer().publicKeyRaw, keyring.publicKey)).toMatchObject({
      state: "match",
      seq: 1,
    });
  });
});
