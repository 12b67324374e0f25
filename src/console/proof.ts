/**
 * Proving the human: the passphrase opens the keyring. What the proof yields — the approver key's
 * signer (for decisions) and the audit private key (for the audit views) — is kept by the console
 * only for the proven window, then dropped (src/console/sessions.ts).
 */
import type { KeyObject } from "node:crypto";
import { ensurePinned, pinnedSigner } from "../approval/pin.js";
import type { DecisionSigner } from "../keyring/approver.js";
import { unlockKeyring } from "../keyring/keyring.js";
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
  return { signer: unlocked.signer, auditKey };
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
