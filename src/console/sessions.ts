/**
 * Console sessions. A session exists only after the human was proven (passphrase or passkey); its id is 32 random
 * bytes in an HttpOnly, SameSite=Strict cookie, it has its own CSRF token, and it ends after
 * `idleMs` without a request. The proof (signer and audit key) is held for `proofWindowMs` from
 * the last passphrase entry and dropped when that ends (0: never held; each decision asks).
 *
 * The cookie alone never uses the held proof. Browsers send a host's cookies to every port of
 * it, so any local web server the human visits (an agent's dev server, say) receives the
 * session cookie, and with it could read a page's CSRF token. A held proof is used only with its
 * proof key: a fresh random value handed over once, in the answer to the request that carried
 * the passphrase, and kept by the console's page in its origin's storage (the port is part of
 * the origin there), which sends it back with each form or request.
 *
 * A held proof is also dropped before its window ends once keyring.json names another approver
 * key (`portcullis rotate-keys`): what it would sign every gateway refuses, so the next decision
 * asks for the passphrase again, and says why (`proofDropped`); the nav bar of the next page says
 * it once too (`droppedNotice`).
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { Proof, ProofDropped } from "./proof.js";

/**
 * Cookies are not kept apart by port, and two consoles (two state directories) may run side by
 * side on 127.0.0.1: each console's cookies carry its port in their name.
 */
export function sessionCookie(port: number): string {
  return `portcullis_session_${port}`;
}
export function loginCookie(port: number): string {
  return `portcullis_login_${port}`;
}

export interface ConsoleSession {
  id: string;
  csrf: string;
  createdAt: number;
  lastSeen: number;
  proof: Proof | null;
  proofUntil: number;
  /** the key that must come with a request to use the held proof (null: none held) */
  proofKey: string | null;
  /** the passkey this session was opened with (null: opened with the passphrase) */
  passkey: string | null;
  /** why the held proof was dropped before its window ended (the keys were rotated), until the next proof */
  proofDropped: ProofDropped | null;
  /** whether a page's nav bar said `proofDropped` already (it says it once) */
  proofDroppedSaid: boolean;
}

export function token(): string {
  return randomBytes(32).toString("base64url");
}

/** Constant-time comparison of two tokens (false when either is missing). */
export function sameToken(a: string | null | undefined, b: string | null | undefined): boolean {
  if (!a || !b) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Whether `given` matches any of the cookie's values (a junk cookie of the same name, set by a
 * server on another port, must not hide the real one). Every value is compared, each in
 * constant time, so the answer's timing does not tell which one matched.
 */
export function sameTokenAsAny(given: string | null | undefined, values: readonly string[]): boolean {
  let found = false;
  for (const v of values) found = sameToken(given, v) || found;
  return found;
}

export class Sessions {
  private readonly byId = new Map<string, ConsoleSession>();
  private readonly timer: NodeJS.Timeout;

  /**
   * `outdated` says why a held proof no longer signs what gateways honour (null while it does:
   * src/console/proof.ts, proofOutdatedBy); it is asked at each use of a held proof.
   */
  constructor(
    readonly idleMs: number,
    readonly proofWindowMs: number,
    private readonly outdated: (proof: Proof) => ProofDropped | null = () => null,
  ) {
    this.timer = setInterval(() => this.sweep(), 1000);
    this.timer.unref();
  }

  /** A session after a proof: the passphrase's (held for the window) or a passkey's (nothing held). */
  create(proof: Proof | null, passkey: string | null = null): ConsoleSession {
    const now = Date.now();
    const s: ConsoleSession = {
      id: token(),
      csrf: token(),
      createdAt: now,
      lastSeen: now,
      proof: null,
      proofUntil: 0,
      proofKey: null,
      passkey,
      proofDropped: null,
      proofDroppedSaid: false,
    };
    this.byId.set(s.id, s);
    if (proof) this.proven(s, proof);
    return s;
  }

  /** The live session named by the cookie value (touching it unless `touch` is false). */
  get(id: string | undefined, touch = true): ConsoleSession | null {
    if (!id) return null;
    const s = this.byId.get(id);
    if (!s) return null;
    const now = Date.now();
    if (now - s.lastSeen > this.idleMs) {
      this.end(s);
      return null;
    }
    if (touch) s.lastSeen = now;
    return s;
  }

  /**
   * The live session named by any of a session cookie's values (the first that names one): a
   * cookie of the same name set by a server on another port, sent before ours, is passed over.
   */
  fromCookie(values: readonly string[], touch = true): ConsoleSession | null {
    for (const v of values) {
      const s = this.get(v, touch);
      if (s) return s;
    }
    return null;
  }

  /**
   * A fresh passphrase proof: held for the window (or not at all when the window is 0). Returns
   * the new proof key, for the answer to the request that carried the passphrase only (null when
   * nothing is held); any earlier key stops working.
   */
  proven(s: ConsoleSession, proof: Proof): string | null {
    if (this.proofWindowMs <= 0) {
      drop(s);
      return null;
    }
    s.proof = proof;
    s.proofUntil = Date.now() + this.proofWindowMs;
    s.proofKey = token();
    s.proofDropped = null;
    s.proofDroppedSaid = false;
    return s.proofKey;
  }

  /**
   * The held proof, for a request that brought its key, while the window is open; dropped once
   * it has passed. Null without the key: the request must carry the passphrase itself.
   */
  proof(s: ConsoleSession, key: string | null | undefined): Proof | null {
    if (!this.held(s)) return null;
    return sameToken(key, s.proofKey) ? s.proof : null;
  }

  /**
   * Whether a proof is held (for what a page says; using it needs the key, see proof). One whose
   * window passed is dropped, and so is one whose key keyring.json no longer names (its reason
   * kept in `proofDropped`).
   */
  held(s: ConsoleSession): boolean {
    if (s.proof && Date.now() >= s.proofUntil) drop(s);
    const why = s.proof ? this.outdated(s.proof) : null;
    if (why !== null) {
      drop(s);
      s.proofDropped = why;
      s.proofDroppedSaid = false;
    }
    return s.proof !== null;
  }

  /**
   * Why the held proof was dropped, for the nav bar of the page being drawn: once per drop (later
   * pages say only that decisions ask for the passphrase); null when there is nothing to say.
   */
  droppedNotice(s: ConsoleSession): ProofDropped | null {
    if (this.held(s) || s.proofDropped === null || s.proofDroppedSaid) return null;
    s.proofDroppedSaid = true;
    return s.proofDropped;
  }

  /**
   * What to say when a request that needs a proof brought neither the passphrase nor a held
   * proof's key (a form drawn while a proof was held, sent after it ended): why it ended when it
   * was dropped, else that none is held here. Never a wrong passphrase: nothing was tried.
   */
  passphraseNeeded(s: ConsoleSession, to: string): string {
    const held = this.held(s);
    if (!held && s.proofDropped !== null) return s.proofDropped.why;
    const because = held
      ? "the passphrase proof held now is for the browser it was typed in, and this request did not bring its key"
      : this.proofWindowMs <= 0
        ? "this console holds no passphrase proof (its proof window is 0)"
        : `no passphrase proof is held now (one is held for ${Math.round(this.proofWindowMs / 1000)} s after the passphrase is typed)`;
    return `${because}: type the passphrase ${to}`;
  }

  end(s: ConsoleSession): void {
    drop(s);
    this.byId.delete(s.id);
  }

  /** Ends every session opened with this passkey (it was removed: it proves nobody any more). */
  endOpenedWith(passkey: string): void {
    for (const s of [...this.byId.values()]) if (s.passkey === passkey) this.end(s);
  }

  close(): void {
    clearInterval(this.timer);
    for (const s of this.byId.values()) drop(s);
    this.byId.clear();
  }

  private sweep(): void {
    const now = Date.now();
    for (const s of [...this.byId.values()]) {
      if (now - s.lastSeen > this.idleMs) this.end(s);
      else if (s.proof && now >= s.proofUntil) drop(s);
    }
  }
}

function drop(s: ConsoleSession): void {
  s.proof = null;
  s.proofUntil = 0;
  s.proofKey = null;
}
