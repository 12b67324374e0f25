// Number literals JSON text allows and a double cannot hold, put anywhere in a JSON value: for
// the tests of how the gateway refuses them (JSON.parse reads each as ±Infinity).

/** Number literals JSON allows and a double cannot hold: JSON.parse reads each as ±Infinity. */
export const HUGE = ["1e400", "-1e400", "1E+309", "-2.5e999", "1.7976931348623159e308"];
const SENTINEL = "\u0001huge\u0001";

/**
 * JSON text of `base` with a number literal put somewhere in it (`text(literal)`), following
 * `steps` down through arrays and objects (each step picks a child, or stops there), and the path
 * it was put at.
 */
export function withNumber(
  base: Record<string, unknown>,
  steps: number[],
): { text: (literal: string) => string; path: (string | number)[] } {
  const root = JSON.parse(JSON.stringify(base)) as Record<string, unknown>;
  const path: (string | number)[] = [];
  let at: unknown[] | Record<string, unknown> = root;
  for (const step of steps) {
    const keys: (string | number)[] = Array.isArray(at) ? at.map((_, i) => i) : Object.keys(at);
    const key = keys[step % (keys.length + 1)];
    const child = key === undefined ? undefined : (at as Record<string | number, unknown>)[key];
    if (key === undefined || typeof child !== "object" || child === null) {
      // put it here: beside the children of an array, in place of a member's value, or as a new member
      if (Array.isArray(at)) {
        const i = step % (at.length + 1);
        at.splice(i, 0, SENTINEL);
        path.push(i);
      } else {
        const name = key === undefined ? "huge" : String(key);
        Object.defineProperty(at, name, {
          value: SENTINEL,
          enumerable: true,
          writable: true,
          configurable: true,
        });
        path.push(name);
      }
      const json = JSON.stringify(root);
      return { text: (literal) => json.replace(JSON.stringify(SENTINEL), literal), path };
    }
    path.push(key);
    at = child as unknown[] | Record<string, unknown>;
  }
  return withNumber(base, [...steps, 0]);
}

/**
 * A JSON number token's exact value as a fraction of big integers (mantissa digits × 10^(exponent
 * − digits after the point)): the reference the exact-number tests compare spellings with.
 */
export function fraction(t: string): { n: bigint; d: bigint } {
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(t);
  if (!m) throw new Error(`not a number token: ${t}`);
  const frac = m[3] ?? "";
  const e = BigInt(m[4] ?? "0") - BigInt(frac.length);
  let n = BigInt(`${m[2]}${frac}`) * (m[1] ? -1n : 1n);
  let d = 1n;
  if (e >= 0n) n *= 10n ** e;
  else d = 10n ** -e;
  return { n, d };
}

/** Whether two JSON number tokens are the same number exactly. */
export function sameNumber(a: string, b: string): boolean {
  const x = fraction(a);
  const y = fraction(b);
  return x.n * y.d === y.n * x.d;
}
