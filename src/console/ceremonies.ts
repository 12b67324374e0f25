/**
 * The server half of WebAuthn ceremonies in flight: what was asked (a challenge, a prepared
 * decision, the signer of a registration), kept for two minutes and used once, found again by
 * the challenge the browser's answer carries.
 */

const CEREMONY_MS = 120_000;

interface Ceremony<T> {
  value: T;
  expires: number;
}

/** One-use, expiring values keyed by their WebAuthn challenge. */
export class Ceremonies<T> {
  private readonly byChallenge = new Map<string, Ceremony<T>>();
  constructor(private readonly max: number) {}

  put(challenge: string, value: T): void {
    const now = Date.now();
    for (const [k, c] of this.byChallenge) if (c.expires <= now) this.byChallenge.delete(k);
    while (this.byChallenge.size >= this.max) this.byChallenge.delete(this.byChallenge.keys().next().value!);
    this.byChallenge.set(challenge, { value, expires: now + CEREMONY_MS });
  }

  /**
   * The value for `challenge`, removed (one use); null when unknown or expired. With `belongs`,
   * a value it refuses is left in place and null is returned: an answer posted to the wrong route
   * (another request's, by mistake or by a page holding the session cookie) must not use up the
   * ceremony the human is still answering on the right one. It stays one use: only a take that
   * accepts it removes it.
   */
  take(challenge: string | null, belongs?: (value: T) => boolean): T | null {
    if (challenge === null) return null;
    const c = this.byChallenge.get(challenge);
    if (!c) return null;
    if (c.expires <= Date.now()) {
      this.byChallenge.delete(challenge);
      return null;
    }
    if (belongs && !belongs(c.value)) return null;
    this.byChallenge.delete(challenge);
    return c.value;
  }
}

/** The challenge a WebAuthn response answers (from its clientDataJSON); null when unreadable. */
export function answeredChallenge(response: unknown): string | null {
  try {
    const r = response as { response?: { clientDataJSON?: unknown } };
    const text = Buffer.from(String(r.response?.clientDataJSON ?? ""), "base64url").toString("utf8");
    const challenge = (JSON.parse(text) as { challenge?: unknown }).challenge;
    return typeof challenge === "string" ? challenge : null;
  } catch {
    return null;
  }
}
