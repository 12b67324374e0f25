import type { KeyObject } from "node:crypto";
import { ed25519PublicKeyFromRaw, verifyApproverSignature } from "../keyring/approver.js";
import { loadPublicKeyring } from "../keyring/keyring.js";
import type { Store } from "../store/db.js";
import { type DecisionStatement, decisionDigest, denialStatement, grantStatement } from "./decision.js";
import type { GrantRecord } from "./grants.js";
import {
  assertionFault,
  decisionChallenge,
  isPasskeySignature,
  parsePasskeySignature,
} from "./passkeyAssertion.js";
import { PasskeyChain, type PasskeyLookup } from "./passkeyChain.js";
import { PinTracker } from "./pin.js";
import type { ApprovalRequest } from "./requests.js";

export type Verdict = { ok: true } | { ok: false; why: string };

/**
 * Whether a decision row in the store was signed by the approver key pinned in the audit chain,
 * or by a passkey pinned there (a pin signed by that approver key) and not removed since.
 * A gateway asks before a grant covers a call and before a decided request ends a wait.
 *
 * The pinned key is learnt once (the first pin record that names the keyring's approver key);
 * keyring.json is read again at every verification, so that a keyring whose approver key is not
 * the pinned one is seen: then nothing verifies. Verified rows are remembered by the digest of
 * what was signed and the signature, so a row read again costs a hash, not an Ed25519 verify; a
 * passkey's row also costs a look for new passkey records in the chain, so that a removal
 * takes its authority away at once.
 */
export class DecisionVerifier {
  private readonly pins: PinTracker;
  private pinned: { keyId: string; raw: string; key: KeyObject; auditRaw: Buffer } | null = null;
  private readonly verified = new Set<string>();
  private readonly passkeys: PasskeyChain;
  /** the audit public key, once trusted() succeeded (for authorityHolds) */
  private audit: KeyObject | null = null;

  constructor(
    db: Store,
    private readonly stateDir: string,
    /** told, when the pin is found, of later pins in the chain (ignored: there is no rotation) */
    private readonly onIgnoredPins: (seqs: readonly number[]) => void = () => {},
  ) {
    this.pins = new PinTracker(db);
    this.passkeys = new PasskeyChain(db);
  }

  /** The approver key to verify with, or why there is none that can be trusted. */
  trusted(): { ok: true; key: KeyObject; audit: KeyObject } | { ok: false; why: string; mismatch?: true } {
    let keyring: ReturnType<typeof loadPublicKeyring>;
    try {
      keyring = loadPublicKeyring(this.stateDir);
    } catch (e) {
      return { ok: false, why: `the keyring cannot be read (${(e as Error).message})` };
    }
    if (!keyring) return { ok: false, why: "there is no keyring" };
    const approver = keyring.approver;
    if (!approver) {
      return this.pinned
        ? {
            ok: false,
            why: "the keyring no longer has the approver key pinned in the audit chain",
            mismatch: true,
          }
        : {
            ok: false,
            why: "the keyring has no approver key yet (the next approve or deny adds and pins it)",
          };
    }
    const raw = approver.publicKeyRaw.toString("base64url");
    if (this.pinned) {
      if (this.pinned.raw !== raw) return { ok: false, why: mismatch(approver.keyId), mismatch: true };
      // the audit key the pin was found under: passkey records are opened with it
      if (!this.pinned.auditRaw.equals(keyring.publicKeyRaw)) {
        return {
          ok: false,
          why: "the keyring's audit key is not the one the approver key was pinned under (keyring.json was replaced or edited)",
          mismatch: true,
        };
      }
      return { ok: true, key: this.pinned.key, audit: keyring.publicKey };
    }
    const status = this.pins.status(approver.publicKeyRaw, keyring.publicKey);
    if (status.state === "none")
      return { ok: false, why: "no approver key is pinned in the audit chain yet" };
    if (status.state !== "match") return { ok: false, why: mismatch(approver.keyId), mismatch: true };
    this.pinned = {
      keyId: approver.keyId,
      raw,
      key: ed25519PublicKeyFromRaw(approver.publicKeyRaw),
      auditRaw: Buffer.from(keyring.publicKeyRaw),
    };
    this.pins.refresh(); // the whole chain, once: later pins are reported
    if (this.pins.ignored.length > 0) this.onIgnoredPins(this.pins.ignored);
    this.audit = keyring.publicKey;
    return { ok: true, key: this.pinned.key, audit: keyring.publicKey };
  }

  /**
   * For a grant verified earlier and about to cover a call again: whether its signer still has
   * authority. Always true for the approver key (nothing removes it); for a passkey, false once a
   * removal record names it. Costs nothing for an Ed25519 signature, and for a passkey's one
   * read of the chain records written since the last look (no keyring read).
   */
  authorityHolds(signature: string | null): boolean {
    if (signature === null || !isPasskeySignature(signature)) return true;
    const assertion = parsePasskeySignature(signature);
    if (!assertion || !this.pinned || !this.audit) return false;
    return this.passkeys.lookup(assertion.credentialId, this.pinned.key, this.audit).ok;
  }

  /**
   * The passkey `credentialId` as pinned in the chain (by the trusted approver key) and not
   * removed, or why it has no authority.
   */
  passkey(credentialId: string): PasskeyLookup {
    const trust = this.trusted();
    if (!trust.ok) return { ok: false, why: trust.why };
    return this.passkeys.lookup(credentialId, trust.key, trust.audit);
  }

  /** Later pin records, which are ignored: their seq numbers. */
  get ignoredPins(): readonly number[] {
    return this.pins.ignored;
  }

  /**
   * A grant row whose scope column cannot be read (grants.ts: read as covering nothing) is refused
   * as such, before its signature is looked at: a signature over its empty scopes would fail too,
   * but "does not verify" would send the reader after the key rather than the damaged row. A row
   * that reads is verified over what it says now (the cache is keyed by that digest), so a
   * column rewritten after an earlier verification is verified again, never taken on trust.
   */
  verifyGrant(g: GrantRecord): Verdict {
    if (g.unreadable !== undefined)
      return { ok: false, why: `its row cannot be read (${g.unreadable}), so it covers no call` };
    return this.verify(grantStatement(g), g.signature);
  }

  verifyDenial(r: ApprovalRequest): Verdict {
    return this.verify(denialStatement(r), r.decisionSignature);
  }

  private verify(statement: DecisionStatement, signature: string | null): Verdict {
    const trust = this.trusted();
    if (!trust.ok) return { ok: false, why: trust.why };
    if (!signature) return { ok: false, why: "it is not signed" };
    let digest: string;
    try {
      digest = decisionDigest(statement);
    } catch {
      return { ok: false, why: "its fields cannot be read" };
    }
    const key = `${digest}\u0000${signature}`;
    if (isPasskeySignature(signature)) return this.verifyPasskey(trust, digest, signature, key);
    if (this.verified.has(key)) return { ok: true };
    if (!verifyApproverSignature(trust.key, digest, signature)) {
      return { ok: false, why: "its signature does not verify against the pinned approver key" };
    }
    this.verified.add(key);
    return { ok: true };
  }

  /** A passkey's assertion over `digest`: its credential must still be pinned and not removed. */
  private verifyPasskey(
    trust: { key: KeyObject; audit: KeyObject },
    digest: string,
    signature: string,
    cacheKey: string,
  ): Verdict {
    const assertion = parsePasskeySignature(signature);
    if (!assertion) return { ok: false, why: "its passkey assertion cannot be read" };
    const found = this.passkeys.lookup(assertion.credentialId, trust.key, trust.audit);
    if (!found.ok) return { ok: false, why: found.why };
    if (this.verified.has(cacheKey)) return { ok: true };
    const fault = assertionFault(found.pin, decisionChallenge(digest), assertion);
    if (fault) return { ok: false, why: fault };
    this.verified.add(cacheKey);
    return { ok: true };
  }
}

function mismatch(keyId: string): string {
  return `the keyring's approver key ${keyId} is not the one pinned in the audit chain (keyring.json was replaced or edited)`;
}
