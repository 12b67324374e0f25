/**
 * Proving the human: the passphrase opens the keyring. What the proof yields — the approver key's
 * signer (for decisions) and the audit private key (for the audit views) — is kept by the console
 * only for the proven window, then dropped (src/console/sessions.ts).
 */
import type { KeyObject } from "node:crypto";
import { statSync } from "node:fs";
import { recordLateChange } from "../approval/lateWrapping.js";
import { ensurePinned, pinnedSigner } from "../approval/pin.js";
import type { DecisionSigner } from "../keyring/approver.js";
import { keyringPath, loadPublicKeyring, type PublicKeyring, unlockKeyring } from "../keyring/keyring.js";
import type { Store } from "../store/db.js";

export interface Proof {
  signer: DecisionSigner;
  /** the keyring's audit private key, then those a key rotation replaced (old records read with them) */
  auditKey: KeyObject[];
}

/**
 * Opens the keyring with `passphrase` (WrongPassphraseError when it does not fit) and returns the
 * approver signer, pinned in the audit chain like the CLI's (pinnedSigner): a keyring without an
 * approver key gets one; an approver key that is not the pinned one is refused
 * (ApproverKeyMismatchError).
 */
export async function prove(
  db: Store,
  stateDir: string,
  passphrase: string,
  notice: (line: string) => void,
): Promise<Proof> {
  const unlocked = await unlockKeyring(stateDir, passphrase);
  unlocked.dataKey.fill(0);
  for (const k of unlocked.earlierDataKeys) k.fill(0);
  const auditKey = [unlocked.auditPrivateKey, ...unlocked.earlierAuditKeys];
  if (!unlocked.signer) {
    // An old keyring: pinnedSigner adds the approver key and pins it (a second key derivation, once).
    const signer = await pinnedSigner(db, stateDir, passphrase, notice);
    return { signer, auditKey };
  }
  ensurePinned(db, stateDir, unlocked.signer, notice);
  // a passphrase change its command left unrecorded is recorded now, late, as every command that
  // takes the passphrase does (pinnedSigner above does it for an old keyring): the login skipped it
  await recordLateChange(db, stateDir, unlocked.auditPrivateKey, notice);
  return { signer: unlocked.signer, auditKey };
}

/**
 * Why a held proof was dropped before its window ended: `cause` in a few words (for the nav bar),
 * `why` the whole sentence (where the passphrase is asked again).
 */
export interface ProofDropped {
  cause: string;
  why: string;
}

/**
 * Why a held proof no longer signs what gateways honour, or null while it does: keyring.json names
 * another approver key than the one the proof opened. `portcullis rotate-keys` rewrites it so, and
 * every gateway then refuses what the old key signs (rotated away); a passphrase change rewrites it
 * with the same keys, which changes nothing here. keyring.json is read again only when its file
 * changed (its inode, size or times), since this is asked at each use of a held proof.
 */
export function proofOutdatedBy(stateDir: string): (proof: Proof) => ProofDropped | null {
  let seen: { stamp: string; keyring: PublicKeyring | null; problem: string | null } | null = null;
  const current = () => {
    let stamp: string;
    try {
      const st = statSync(keyringPath(stateDir), { bigint: true });
      stamp = `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
    } catch (e) {
      stamp = `unreadable: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`;
    }
    if (seen?.stamp !== stamp) {
      try {
        seen = { stamp, keyring: loadPublicKeyring(stateDir), problem: null };
      } catch (e) {
        seen = { stamp, keyring: null, problem: (e as Error).message };
      }
    }
    return seen;
  };
  return (proof) => {
    const { keyring, problem } = current();
    const held = proof.signer.publicKeyRaw;
    const now = keyring?.approver ?? null;
    if (now?.publicKeyRaw.equals(held)) return null;
    const again = "decisions it signed would be refused by every gateway, so the passphrase is asked again";
    if (now && keyring!.earlierApprovers.some((k) => k.equals(held))) {
      const cause = "the keys were rotated";
      return {
        cause,
        why: `${cause}: keyring.json's approver key is now ${now.keyId}, and ${proof.signer.keyId}, the key the held passphrase proof signed with, was rotated away; ${again}`,
      };
    }
    if (now) {
      const cause = "keyring.json was replaced";
      return {
        cause,
        why: `${cause}: it names approver key ${now.keyId}, not ${proof.signer.keyId}, the key the held passphrase proof signed with; ${again}`,
      };
    }
    const cause = `keyring.json ${problem !== null ? "could not be read" : keyring ? "names no approver key" : "is gone"}`;
    return {
      cause,
      why: `${cause}${problem !== null ? ` (${problem})` : ""}, so the key the held passphrase proof signed with (${proof.signer.keyId}) may no longer be honoured; the passphrase is asked again`,
    };
  };
}

/**
 * An empty passphrase, refused before it is tried: no keyring opens with one (init and every
 * change refuse it), and it is what a form left empty sends (one drawn while a proof was held,
 * whose proof then ended), so it never counts as a wrong attempt (LoginLimiter).
 */
export class PassphraseMissing extends Error {
  override name = "PassphraseMissing";
  constructor() {
    super("no passphrase was given: type the passphrase");
  }
}

/** Refused before trying: too many wrong passphrases lately (see LoginLimiter). */
export class LoginThrottled extends Error {
  override name = "LoginThrottled";
  constructor(readonly waitMs: number) {
    super(`too many wrong passphrases: try again in ${Math.ceil(waitMs / 1000)} s`);
  }
}

/**
 * Failed passphrase attempts, counted for a whole class of requests, not per session (a new
 * session is free to make): the console keeps one for the requests that hold its ticket and one
 * for all others (server.ts, ticket.ts). The first few failures cost nothing; after that each one
 * doubles the wait before the next attempt is even tried, up to a minute. A success resets it.
 */
export class LoginLimiter {
  private failures = 0;
  private notBefore = 0;

  constructor(
    private readonly freeFailures = 5,
    private readonly maxWaitMs = 60_000,
  ) {}

  /** Milliseconds to wait before another attempt is accepted (0: go ahead). */
  wait(now = Date.now()): number {
    return Math.max(0, this.notBefore - now);
  }

  failed(now = Date.now()): void {
    this.failures++;
    if (this.failures > this.freeFailures) {
      const wait = Math.min(this.maxWaitMs, 1000 * 2 ** (this.failures - this.freeFailures - 1));
      this.notBefore = now + wait;
    }
  }

  succeeded(): void {
    this.failures = 0;
    this.notBefore = 0;
  }
}
