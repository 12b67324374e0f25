/**
 * HTML character references, as both scrubbers of released values read them (the egress proxy's
 * echo check, src/vault/egress/echo.ts, and the scrubber of server output, src/vault/scrub.ts).
 * An HTML template writes a character of text as a reference: Go's html/template writes `+` as
 * `&#43;`, others write `&#x2B;`, `&#x2b;` or `&plus;`; an upstream's HTML error page that quotes
 * a token, or a server that renders one into a page, spells it so.
 *
 * Read here: a numeric reference, decimal (`&#43;`) or hex (`&#x2B;`, `&#X2b;`), with up to
 * REF_DIGITS digits (leading zeros included), and its `;`; and the named references HTML
 * defines for ASCII characters (NAMED), with their `;`. Not read: a reference without its `;`
 * (which HTML's parser reads too, for some names), a numeric one of more digits, a name for a
 * character outside ASCII.
 */

/** The most digits read in one numeric reference (leading zeros included). */
export const REF_DIGITS = 10;

/**
 * The named references HTML defines for ASCII characters, by character (the HTML standard's
 * list of named character references, every name whose character is ASCII).
 */
export const NAMED: ReadonlyMap<string, readonly string[]> = new Map([
  ["\t", ["Tab"]],
  ["\n", ["NewLine"]],
  ["!", ["excl"]],
  ['"', ["quot", "QUOT"]],
  ["#", ["num"]],
  ["$", ["dollar"]],
  ["%", ["percnt"]],
  ["&", ["amp", "AMP"]],
  ["'", ["apos"]],
  ["(", ["lpar"]],
  [")", ["rpar"]],
  ["*", ["ast", "midast"]],
  ["+", ["plus"]],
  [",", ["comma"]],
  [".", ["period"]],
  ["/", ["sol"]],
  [":", ["colon"]],
  [";", ["semi"]],
  ["<", ["lt", "LT"]],
  ["=", ["equals"]],
  [">", ["gt", "GT"]],
  ["?", ["quest"]],
  ["@", ["commat"]],
  ["[", ["lsqb", "lbrack"]],
  ["\\", ["bsol"]],
  ["]", ["rsqb", "rbrack"]],
  ["^", ["Hat"]],
  ["_", ["lowbar", "UnderBar"]],
  ["`", ["grave", "DiacriticalGrave"]],
  ["{", ["lcub", "lbrace"]],
  ["|", ["verbar", "vert", "VerticalLine"]],
  ["}", ["rcub", "rbrace"]],
]);

/** The character each name of NAMED stands for. */
export const NAMED_CHAR: ReadonlyMap<string, string> = new Map(
  [...NAMED].flatMap(([c, names]) => names.map((n) => [n, c] as const)),
);

/** The longest name of NAMED, in characters. */
export const LONGEST_NAME = Math.max(...[...NAMED_CHAR.keys()].map((n) => n.length));

/**
 * The most characters one reference takes: `&#x`, REF_DIGITS digits and `;`, or `&`, the longest
 * name and `;`.
 */
export const LONGEST_REFERENCE = Math.max(4 + REF_DIGITS, 2 + LONGEST_NAME);

/**
 * The reference that starts at `at` in `s` (its `&`), if complete: the character it stands for
 * and where it ends; null otherwise. A string is read by UTF-16 code units, a buffer by bytes
 * (a reference is ASCII either way).
 */
export function referenceAt(s: string | Uint8Array, at: number): { char: number; end: number } | null {
  if (unitAt(s, at) !== 0x26) return null;
  if (unitAt(s, at + 1) === 0x23) {
    const x = unitAt(s, at + 2);
    const hex = x === 0x78 || x === 0x58;
    let q = at + (hex ? 3 : 2);
    let n = 0;
    let digits = 0;
    for (; digits < REF_DIGITS; q++, digits++) {
      const d = digitValue(unitAt(s, q), hex);
      if (d < 0) break;
      n = n * (hex ? 16 : 10) + d;
    }
    if (digits === 0 || unitAt(s, q) !== 0x3b || n > 0x10ffff) return null;
    return { char: n, end: q + 1 };
  }
  // the name's letters up to its `;`, read into a string only when the `;` is there
  let q = at + 1;
  for (; q <= at + LONGEST_NAME; q++) {
    const c = unitAt(s, q);
    if (!((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a))) break;
  }
  if (q === at + 1 || unitAt(s, q) !== 0x3b) return null;
  const name = typeof s === "string" ? s.slice(at + 1, q) : String.fromCharCode(...s.subarray(at + 1, q));
  const char = NAMED_CHAR.get(name);
  return char === undefined ? null : { char: char.charCodeAt(0), end: q + 1 };
}

/** The code unit (or byte) at `i`, -1 past the end. */
function unitAt(s: string | Uint8Array, i: number): number {
  if (i >= s.length) return -1;
  return typeof s === "string" ? s.charCodeAt(i) : s[i]!;
}

function digitValue(c: number, hex: boolean): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (!hex) return -1;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}
