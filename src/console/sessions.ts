/**
 * Console sessions. A session exists only after the human was proven (passphrase or passkey); its id is 32 random
 * bytes in an HttpOnly, SameSite=Strict cookie, it has its own CSRF token, and it ends after
 * `idleMs` without a request. The proof (signer and audit key) is held for `proofWindowMs` from
 * the last passphrase entry and dropped when that ends (0: never held; each decision asks).
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { Proof } from "./proof.js";

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
  /** the passkey this session was opened with (null: opened with the passphrase) */
  passkey: string | null;
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

export class Sessions {
  private readonly byId = new Map<string, ConsoleSession>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    readonly idleMs: number,
    readonly proofWindowMs: number,
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
      passkey,
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

  /** A fresh passphrase proof: held for the window (or not at all when the window is 0). */
  proven(s: ConsoleSession, proof: Proof): void {
    if (this.proofWindowMs <= 0) {
      s.proof = null;
      s.proofUntil = 0;
      return;
    }
    s.proof = proof;
    s.proofUntil = Date.now() + this.proofWindowMs;
  }

  /** The held proof while the window is open; dropped (and null) once it has passed. */
  proof(s: ConsoleSession): Proof | null {
    if (s.proof && Date.now() >= s.proofUntil) s.proof = null;
    return s.proof;
  }

  end(s: ConsoleSession): void {
    s.proof = null;
    this.byId.delete(s.id);
  }

  /** Ends every session opened with this passkey (it was removed: it proves nobody any more). */
  endOpenedWith(passkey: string): void {
    for (const s of [...this.byId.values()]) if (s.passkey === passkey) this.end(s);
  }

  close(): void {
    clearInterval(this.timer);
    for (const s of this.byId.values()) s.proof = null;
    this.byId.clear();
  }

  private sweep(): void {
    const now = Date.now();
    for (const s of [...this.byId.values()]) {
      if (now - s.lastSeen > this.idleMs) this.end(s);
      else if (s.proof && now >= s.proofUntil) s.proof = null;
    }
  }
}
