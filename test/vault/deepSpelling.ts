// Spellings of a released value with escapes read more than once, and without their `;`, for the
// property tests of both scrubbers (scrub-deep-escapes.property.test.ts, egress-echo-deep
// .property.test.ts): each character written as itself, an HTML reference (decimal or hex, up to
// REF_DIGITS digits with leading zeros, with or without its `;`, named or a legacy name without
// `;`), a reference written with references (`&amp;#43;`, `&AMP;amp;#x2b;`, `&#38;#43;`), a `\u`
// escape (escaped again as JSON text in a JSON string writes it, when asked), a URL escape
// escaped up to five times (`%2B` … `%252525252B`), or a URL escape whose `%` is a reference
// (`&#37;2B`, `&#37;252B`). And the tests' own reading of all of them, not the scrubbers'.
import { NAMED } from "../../src/vault/htmlReferences.js";

/**
 * The bounds the spellings here reach: the digits of one reference (src/vault/htmlReferences.ts
 * REF_DIGITS) and the readings of references and `%25` (REFERENCE_READINGS). Written out, not
 * imported, so that the spellings stay the same against a build without them
 * (scrub-deep-escapes.property.test.ts checks they are the scrubbers').
 */
export const REF_DIGITS = 16;
export const REFERENCE_READINGS = 4;

/** How many kinds of spelling spellDeep picks among. */
export const KINDS = 10;

const hex = (n: number, width: number, upper: boolean) => {
  const h = n.toString(16).padStart(width, "0");
  return upper ? h.toUpperCase() : h;
};

/** The names HTML's parser reads without a `;` (htmlReferences.ts), by character. */
const LEGACY: Record<string, string[]> = {
  '"': ["quot", "QUOT"],
  "&": ["amp", "AMP"],
  "<": ["lt", "LT"],
  ">": ["gt", "GT"],
};

/**
 * A reference to `c` of the kind `pick` chooses (decimal, hex, named), its `;` left out when
 * `bare` (then numeric or a legacy name), with leading zeros up to REF_DIGITS digits in all.
 */
function reference(c: string, pick: number, bare: boolean): string {
  const code = c.codePointAt(0)!;
  const end = bare ? "" : ";";
  const upper = (pick >> 4) % 2 === 0;
  const digits = (n: string) => "0".repeat(Math.max(0, ((pick >> 6) % (REF_DIGITS + 1)) - n.length)) + n;
  switch ((pick >> 1) % 3) {
    case 0:
      return `&#${digits(String(code))}${end}`;
    case 1:
      return `&#${upper ? "X" : "x"}${digits(hex(code, 1, (pick >> 5) % 2 === 0))}${end}`;
    default: {
      const names = bare ? LEGACY[c] : NAMED.get(c);
      return names ? `&${names[(pick >> 5) % names.length]}${end}` : `&#${code}${end}`;
    }
  }
}

/** What `&` is written as at each reading of a reference written with references. */
const AMPERSANDS = ["&amp;", "&AMP;", "&#38;", "&#x26;", "&amp"];

/**
 * One way of writing character `c`, chosen by `pick`; `next` is the text written after it (a
 * reference without its `;` is written only where what follows cannot be read as more of it:
 * a digit, a letter, a `;`, or an escape that reads as one). With `json2`, also a `\u` escape
 * escaped again.
 */
export function spellDeep(c: string, pick: number, next: string, json2 = false): string {
  const bytes = [...Buffer.from(c, "utf8")];
  const upper = (pick >> 4) % 2 === 0;
  // (nor before an escape, `\u0061` or `%61`: read first, it gives a letter or digit)
  const bareOk = next !== "" && !/^[0-9A-Za-z;\\%]/.test(next);
  switch (pick % KINDS) {
    case 1:
      return reference(c, pick, false);
    case 2:
      return reference(c, pick, bareOk && (pick >> 3) % 2 === 0);
    case 3: {
      // `&` written with references once to three times more (four readings at most)
      const times = 1 + ((pick >> 8) % (REFERENCE_READINGS - 1));
      let ref = reference(c, pick, false);
      // (`&amp` without `;` before `#` or a name is the legacy name, read as `&`)
      for (let k = 0; k < times; k++)
        ref = `${AMPERSANDS[(pick >> (9 + k)) % AMPERSANDS.length]}${ref.slice(1)}`;
      return ref;
    }
    case 4:
      return Array.from({ length: c.length }, (_, i) => `\\u${hex(c.charCodeAt(i), 4, upper)}`).join("");
    case 5:
    case 6: {
      // escaped once to five times: `%`, `25` for each time more, then the byte
      const times = 1 + ((pick >> 6) % (1 + REFERENCE_READINGS));
      return bytes.map((b) => `%${"25".repeat(times - 1)}${hex(b, 2, upper)}`).join("");
    }
    case 7: {
      // the `%` of a URL escape written as a reference, escaped up to twice more
      const times = (pick >> 6) % 3;
      return bytes.map((b) => `&#37;${"25".repeat(times)}${hex(b, 2, upper)}`).join("");
    }
    case 8:
      if (json2 && c.length === 1) return `\\\\u${hex(c.charCodeAt(0), 4, upper)}`;
      return c;
    default:
      return c;
  }
}

/**
 * `s` with each character written as `picks` choose, in turn, as encoders leave a character bare:
 * a `\` never bare beside JSON escapes (a `\` kept before `\u0061` reads as `\\` and `u0061`).
 * (A `"` or `\` bare beside URL escapes, written `\"` or `\\` inside a JSON string, is
 * looked for since src/vault/percentSpelling.ts reads it so: jsonLevels.)
 */
export function spellDeepAll(s: string, picks: number[], json2 = false): string {
  const chars = [...s];
  const kind = (i: number) => picks[i % picks.length]! % KINDS;
  const json = chars.some((_, i) => kind(i) === 4 || (json2 && kind(i) === 8));
  const out: string[] = new Array(chars.length);
  for (let i = chars.length - 1; i >= 0; i--) {
    const c = chars[i]!;
    const bare = kind(i) === 0 || kind(i) === 9 || (!json2 && kind(i) === 8);
    let pick = picks[i % picks.length]!;
    if (bare && json && c === "\\") pick = 4;
    out[i] = spellDeep(c, pick, out[i + 1] ?? "", json2);
  }
  return out.join("");
}

const NAME_CHAR = new Map([...NAMED].flatMap(([c, ns]) => ns.map((n) => [n, c] as const)));
const LEGACY_CHAR = new Map(Object.entries(LEGACY).flatMap(([c, ns]) => ns.map((n) => [n, c] as const)));

/** One reading of every HTML reference (HTML's parser's way, in text) and every `%25XX` of `t`. */
function readOnce(t: string): string {
  return t.replace(
    /&#[xX]([0-9a-fA-F]+);?|&#([0-9]+);?|&([A-Za-z]+;?)|%25([0-9a-fA-F]{2})/g,
    (m, h, d, name: string | undefined, twice) => {
      if (h !== undefined || d !== undefined) {
        const n = h !== undefined ? Number.parseInt(h, 16) : Number.parseInt(d, 10);
        return n <= 0x10ffff ? String.fromCodePoint(n) : m;
      }
      if (name !== undefined) {
        if (name.endsWith(";") && NAME_CHAR.has(name.slice(0, -1))) return NAME_CHAR.get(name.slice(0, -1))!;
        // the longest legacy name the letters start with, the rest as written
        for (const legacy of ["quot", "QUOT", "amp", "AMP", "lt", "LT", "gt", "GT"])
          if (name.startsWith(legacy)) return LEGACY_CHAR.get(legacy)! + name.slice(legacy.length);
        return m;
      }
      return `%${twice}`;
    },
  );
}

/**
 * `text` with every escape spellDeep writes read, as deep as it writes them: references and
 * `%25` read five times over, then JSON `\u` escapes (twice), then URL escapes; as UTF-8 bytes in
 * latin1, one character a byte.
 */
export function readDeep(text: string): string {
  let t = text;
  for (let k = 0; k < REFERENCE_READINGS + 1; k++) t = readOnce(t);
  for (let k = 0; k < 2; k++)
    t = t.replace(/\\u([0-9a-fA-F]{4})/g, (_m, u) => String.fromCharCode(Number.parseInt(u, 16)));
  return Buffer.from(t, "utf8")
    .toString("latin1")
    .replace(/%([0-9a-fA-F]{2})/g, (_m, h) => String.fromCharCode(Number.parseInt(h, 16)));
}
