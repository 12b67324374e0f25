// The chain of approver key pins after rotations (src/approval/pinChain.ts), as a gateway's
// DecisionVerifier follows it, on a real store rotated twice by the real CLI. The thief holds a
// copy of keyring.json from before the first rotation and its passphrase, so it holds the key the
// chain began with: it appends a rotation of that key to a key of its own, signed with it and
// sealed exactly as a real one is. What it would catch: a rotation taken for valid because its
// signature verifies under a key the chain once honoured (the thief's would then win), and a
// chain that stops after its first rotation; a passphrase change that refuses a rotated keyring.

import { randomBytes } from "node:crypto";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PinTracker } from "../../src/approval/pin.js";
import { DecisionVerifier } from "../../src/approval/trust.js";
import { mintSigner } from "../../src/keyring/approver.js";
import { loadPublicKeyring, unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { changeByCli, withPassphrase } from "../helpers/passphraseChange.js";
import { appendRotation, forgedRotation, rotateByCli } from "../helpers/rotation.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

const SECOND = "the passphrase after one rotation";
const THIRD = "the passphrase after two rotations";
const FOURTH = "the passphrase changed after two rotations";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function rotate(stateDir: string, from: Record<string, string>, to: string): Promise<void> {
  const r = await rotateByCli(stateDir, from, to);
  expect(r.code, r.stderr).toBe(0);
}

describe("the chain of pins after rotations", () => {
  it("follows two rotations; a rotation signed by a key rotated away (a thief's copy) is ignored", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const thief = tempDir("portcullis-thief-");
    cleanup.push(() => removeDir(thief));
    copyFileSync(join(stateDir, "keyring.json"), join(thief, "keyring.json"));
    const first = loadPublicKeyring(stateDir)!;

    await rotate(stateDir, passphraseEnv(), SECOND);

    // the thief rotates the first key, which it holds, to one of its own: signed by that key,
    // in that key's rotation session, sealed to the audit key the chain named with it
    const { signer: stolen, dataKey } = await unlockKeyring(thief, TEST_PASSPHRASE);
    dataKey.fill(0);
    const own = mintSigner(randomBytes(32));
    const forged = forgedRotation(stolen!, own, first.publicKeyRaw);
    let db = openStore(stateDir);
    let forgedSeq: number;
    try {
      forgedSeq = appendRotation(db, forged, first.publicKeyRaw, stolen!.publicKeyRaw);
    } finally {
      db.close();
    }

    await rotate(stateDir, withPassphrase(SECOND), THIRD);

    const now = loadPublicKeyring(stateDir)!;
    db = openStore(stateDir);
    try {
      const pins = new PinTracker(db);
      const chain = pins.follow(now.approver!.publicKeyRaw, now.publicKeyRaw, {
        approvers: now.earlierApprovers,
        audits: now.earlierAudits,
      });
      expect(chain.state).toBe("head");
      if (chain.state !== "head") return;
      const ids = chain.links.map((l) => l.approverKeyId);
      expect(ids).toHaveLength(3);
      expect(ids[0]).toBe(first.approver!.keyId);
      expect(ids[2]).toBe(now.approver!.keyId);
      expect(new Set(ids).size).toBe(3);
      expect(chain.head.auditRaw.equals(now.publicKeyRaw)).toBe(true);
      expect(pins.ignored).toEqual([forgedSeq]);
      // a gateway's verifier trusts the last key, and reports the thief's record
      const reported: number[][] = [];
      const verifier = new DecisionVerifier(db, stateDir, (seqs) => reported.push([...seqs]));
      expect(verifier.trusted().ok).toBe(true);
      expect(reported).toEqual([[forgedSeq]]);
    } finally {
      db.close();
    }

    // a passphrase change of the rotated keyring checks its key against the chain's end (the
    // first pin opened with the keyring's earlier keys), and keeps it
    const changed = await changeByCli(stateDir, THIRD, FOURTH);
    expect(changed.code, changed.stderr).toBe(0);
    const sessions = await runCli(["audit", "sessions"], { stateDir, env: withPassphrase(FOURTH) });
    expect(sessions.code, sessions.stderr).toBe(0);
  }, 30_000);
});
