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
import { earlierOf, PinTracker } from "./pin.js";
import type { ChainLink } from "./pinChain.js";
import type { ApprovalRequest } from "./requests.js";

export type Verdict = { ok: true } | { ok: false; why: string };

/**
 * Whether a decision row in the store was signed by the approver key pinned in the audit chain,
 * or by a passkey pinned there (a pin signed by that approver key) and not removed since.
 * A gateway asks before a grant covers a call and before a decided request ends a wait.
 *
 * The trusted key is the one at the end of the chain of pins (src/approval/pinChain.ts: the first
 * pin, then each rotation signed by the key before it), followed anew at every verification, as
 * keyring.json is read anew: a keyring whose approver key is not that one is seen, and then
 * nothing verifies. A row signed by a key the chain rotated away from is not honoured. Verified rows are remembered by the digest of
 * what was signed and the signature, so a row read again costs a hash, not an Ed25519 verify; a
 * passkey's row also costs a look for new passkey records in the chain, so that a removal
 * takes its authority away at once.
 */
export class DecisionVerifier {
  private readonly pins: PinTracker;
  /** the chain's current key, as last trusted (for authorityHolds) */
  private pinned: { keyId: string; raw: Buffer; key: KeyObject } | null = null;
  /** the chain's keys before the current one (rotated away), with the record that replaced each */
  private rotatedAway: { keyId: string; key: KeyObject; replacedAt: number }[] = [];
  private readonly verified = new Set<string>();
  /** approver signatures verified, by the key id they verified under */
  private readonly verifiedBy = new Map<string, string>();
  /** ignored pin records already told to onIgnoredPins */
  private toldIgnored = 0;
  private readonly passkeys: PasskeyChain;
  /** the audit public key, once trusted() succeeded (for authorityHolds), and its raw bytes */
  private audit: { key: KeyObject; raw: Buffer } | null = null;
  private readonly rowsBetween: (after: number, upTo: number) => number;
  private readonly lastSeq: () => number | null;
  /** the chain's seqs looked at for a gap: up to this one, all present */
  private contiguousTo = 0;
  /** why the chain cannot be trusted, once a record was found missing (it stays so for this process) */
  private holed: string | null = null;

  constructor(
    db: Store,
    private readonly stateDir: string,
    /** told of later pins in the chain that are no verified rotation (ignored), as they appear */
    private readonly onIgnoredPins: (seqs: readonly number[]) => void = () => {},
  ) {
    this.pins = new PinTracker(db);
    this.passkeys = new PasskeyChain(db);
    const rows = db.prepare("SELECT count(*) FROM audit_records WHERE seq > ? AND seq <= ?").pluck();
    const last = db.prepare("SELECT max(seq) FROM audit_records").pluck();
    this.rowsBetween = (after, upTo) => rows.get(after, upTo) as number;
    this.lastSeq = () => last.get() as number | null;
  }

  /**
   * Why the chain has a record missing, or null. A chain's records are seq 1, 2, 3 … with no gap
   * (its triggers see to it); a gap is a record deleted with the trigger dropped, which is how a
   * same-user writer would take a rotation record out so that a keyring.json put back to the copy
   * made before it is honoured again (the records after it, sealed to the new audit key, cannot be
   * renumbered: their headers are sealed). `audit verify` says which; a gateway honours nothing.
   * Looked at from where the last look ended: the first look counts the whole chain, which a
   * gateway does in steps after it starts (lookForMissingRecord), not before it serves.
   */
  private missingRecord(): string | null {
    while (!this.gapStep(Number.POSITIVE_INFINITY));
    return this.holed;
  }

  /** Looks at up to `rows` more of the chain for a gap; true once it has looked at all of it. */
  private gapStep(rows: number): boolean {
    if (this.holed) return true;
    const head = this.lastSeq();
    if (head === null || head <= this.contiguousTo) return true;
    const to = Math.min(head, this.contiguousTo + rows);
    if (this.rowsBetween(this.contiguousTo, to) !== to - this.contiguousTo) {
      this.holed =
        "the audit chain has a record missing (deleted: 'portcullis audit verify' names it), so the key rotations it records cannot be trusted";
      return true;
    }
    this.contiguousTo = to;
    return to === head;
  }

  /**
   * The first look for a missing record, in steps of GAP_STEP_ROWS records between the event
   * loop's other work, for a gateway that has just started: counting a long chain at once (160 to
   * 300 ms for 200,000 records on a 2-core machine) would delay its first answer. A decision
   * checked before the look is done finishes it first (trusted()). `onMissing` is told once when
   * a record is found missing.
   */
  lookForMissingRecord(onMissing: (why: string) => void): void {
    const step = () => {
      let done: boolean;
      try {
        done = this.gapStep(GAP_STEP_ROWS);
      } catch {
        // the store closed (a gateway that failed to start, or ended) or cannot be read now: the
        // look is left to the next decision checked, which makes it whole or fails as the store does
        return;
      }
      if (!done) {
        setImmediate(step).unref();
        return;
      }
      if (this.holed) onMissing(this.holed);
    };
    setImmediate(step).unref();
  }

  /**
   * The approver key to verify with, or why there is none that can be trusted. The chain of pins
   * is followed at each call (the pin records written since the last look, through their index),
   * so a rotation is honoured by a running gateway from the next decision it checks on; keyring.json
   * must hold the key at the chain's end and the audit key named with it, or nothing is trusted.
   */
  trusted(
    /** false: the first look for a missing record is left to lookForMissingRecord (a gateway's start) */
    lookForGaps = true,
  ): { ok: true; key: KeyObject; audit: KeyObject } | { ok: false; why: string; mismatch?: true } {
    const first = this.trustedAsRead(lookForGaps);
    // keyring.json is read before the chain is followed: a rotation whose rewrite and record both
    // came between the two reads finds the keyring's key rotated away, as a copy put back would.
    // Looked at once more, both read anew: what was only that race is then the rotation itself
    // (the old key's decisions are refused all the same, and no longer blamed on a copy).
    if (first.ok || !first.rotatedAway) return first;
    const again = this.trustedAsRead(lookForGaps);
    if (!again.ok) return { ok: false, why: again.why, mismatch: again.mismatch };
    return again;
  }

  /** trusted(), with keyring.json and the chain each read once. */
  private trustedAsRead(
    lookForGaps: boolean,
  ):
    | { ok: true; key: KeyObject; audit: KeyObject }
    | { ok: false; why: string; mismatch?: true; rotatedAway?: true } {
    let keyring: ReturnType<typeof loadPublicKeyring>;
    try {
      keyring = loadPublicKeyring(this.stateDir);
    } catch (e) {
      return { ok: false, why: `the keyring cannot be read (${(e as Error).message})` };
    }
    if (!keyring) return { ok: false, why: "there is no keyring" };
    const missing = lookForGaps ? this.missingRecord() : this.holed;
    if (missing) return { ok: false, why: missing, mismatch: true };
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
    const chain = this.pins.follow(approver.publicKeyRaw, keyring.publicKeyRaw, earlierOf(keyring));
    if (this.pins.ignored.length > this.toldIgnored) {
      this.toldIgnored = this.pins.ignored.length;
      this.onIgnoredPins(this.pins.ignored);
    }
    if (chain.state === "none") return { ok: false, why: "no approver key is pinned in the audit chain yet" };
    if (chain.state === "unopened") return { ok: false, why: mismatch(approver.keyId), mismatch: true };
    this.learn(chain.links);
    const head = chain.head;
    if (!head.approverRaw.equals(approver.publicKeyRaw)) {
      const away = this.rotatedAway.find((r) => r.keyId === approver.keyId);
      return {
        ok: false,
        why: away
          ? `the keyring's approver key ${approver.keyId} was rotated away (audit record ${away.replacedAt}): keyring.json is a copy made before that rotation`
          : mismatch(approver.keyId),
        mismatch: true,
        ...(away ? { rotatedAway: true as const } : {}),
      };
    }
    // the audit key the chain names with its key: passkey records are opened with it
    if (!head.auditRaw.equals(keyring.publicKeyRaw)) {
      return {
        ok: false,
        why: "the keyring's audit key is not the one the approver key was pinned under (keyring.json was replaced or edited)",
        mismatch: true,
      };
    }
    this.audit = { key: keyring.publicKey, raw: keyring.publicKeyRaw };
    return { ok: true, key: this.pinned!.key, audit: keyring.publicKey };
  }

  /** The chain's keys as followed: the current one, and those rotated away (each once made). */
  private learn(links: readonly ChainLink[]): void {
    const head = links[links.length - 1]!;
    if (this.pinned?.keyId === head.approverKeyId) return;
    this.pinned = {
      keyId: head.approverKeyId,
      raw: head.approverRaw,
      key: ed25519PublicKeyFromRaw(head.approverRaw),
    };
    this.rotatedAway = links.slice(0, -1).map((l, i) => ({
      keyId: l.approverKeyId,
      key: ed25519PublicKeyFromRaw(l.approverRaw),
      replacedAt: links[i + 1]!.seq,
    }));
  }

  /**
   * For a grant verified earlier and about to cover a call again: whether its signer still has
   * authority. For the approver key, false once a rotation made another key current (the pin
   * records written since the last look); for a passkey, false once a removal record names it
   * (the chain records written since the last look). No keyring read.
   */
  authorityHolds(signature: string | null): boolean {
    if (signature === null) return true;
    // a record found missing since the grant was verified (the first look runs in steps): no
    // rotation the chain records can be trusted, nor the key that signed it
    if (this.holed) return false;
    if (!isPasskeySignature(signature)) {
      // a rotation since takes it away: the key it was verified with must still be the chain's
      // end (the pin records written since the last look, through their index; no keyring read:
      // the grant's next verification reads keyring.json)
      if (!this.pinned || !this.audit) return false;
      const chain = this.pins.follow(this.pinned.raw, this.audit.raw);
      return chain.state === "head" && this.verifiedBy.get(signature) === chain.head.approverKeyId;
    }
    const assertion = parsePasskeySignature(signature);
    if (!assertion || !this.pinned || !this.audit) return false;
    return this.passkeys.lookup(assertion.credentialId, this.pinned.key, this.audit.key).ok;
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
    // keyed by the key verified with too: a rotation makes every row verify again, under the new key
    const key = `${this.pinned!.keyId}\u0000${digest}\u0000${signature}`;
    if (isPasskeySignature(signature)) return this.verifyPasskey(trust, digest, signature, key);
    if (this.verified.has(key)) return { ok: true };
    if (!verifyApproverSignature(trust.key, digest, signature)) {
      const away = this.rotatedAway.find((r) => verifyApproverSignature(r.key, digest, signature));
      if (away) return { ok: false, why: rotatedAwayWhy(away) };
      return { ok: false, why: "its signature does not verify against the pinned approver key" };
    }
    this.verified.add(key);
    this.verifiedBy.set(signature, this.pinned!.keyId);
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

/** The start of why a decision signed by a key rotated away is not honoured (ROTATED_AWAY_WHY). */
export const ROTATED_AWAY_WHY = "it was signed by approver key";

function rotatedAwayWhy(r: { keyId: string; replacedAt: number }): string {
  return `${ROTATED_AWAY_WHY} ${r.keyId}, rotated away (audit record ${r.replacedAt}): what a key rotated away signed is not honoured, as whoever leaked it may have signed it`;
}

/** Records counted per step of a gateway's first look for a missing record (about 20 ms here). */
const GAP_STEP_ROWS = 20_000;

function mismatch(keyId: string): string {
  return `the keyring's approver key ${keyId} is not the one pinned in the audit chain (keyring.json was replaced or edited)`;
}
