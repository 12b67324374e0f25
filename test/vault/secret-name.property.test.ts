// The vault's name and value checks (src/vault/secrets.ts), against the documented rules, not the
// regex that implements them:
//   - a secret name is "1 to 128 letters, digits, `.`, `_`, `-`, starting with a letter or digit"
//     (docs/configuration.md, `credentials.<VAR>.secret`; the refusal itself says "use letters,
//     digits, '.', '_' or '-' (at most 128, starting with a letter or digit)"); the letters and
//     digits are ASCII ones (the configuration's `credentials` and a remote server's vault header
//     take the same names: a name the vault stores must be one the configuration can name);
//   - "A refused one is described, never repeated": the refusal depends on the name only through
//     the numbers it gives (a length, a count), never on the characters;
//   - a value is "not empty nor blanks only, at most 64 KiB" (MAX_VALUE_BYTES, in UTF-8 bytes).
// fast-check searches arbitrary strings (UTF-16 units, lone surrogates included, and whole
// graphemes) and near-misses of names (a trailing line break, a non-ASCII letter or digit, 128
// and 129 characters, an astral character counted as one or two).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseCredentials } from "../../src/vault/credentials.js";
import { checkSecretName, checkSecretValue, MAX_VALUE_BYTES, VaultError } from "../../src/vault/secrets.js";

const isAsciiLetterOrDigit = (c: number) =>
  (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);

/** The documented rule, character by character (UTF-16 units: every allowed character is one). */
function isNameByRule(name: string): boolean {
  if (name.length < 1 || name.length > 128) return false;
  if (!isAsciiLetterOrDigit(name.charCodeAt(0))) return false;
  for (let i = 1; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (!isAsciiLetterOrDigit(c) && c !== 0x2e && c !== 0x5f && c !== 0x2d) return false;
  }
  return true;
}

function accepted(name: string): boolean {
  try {
    expect(checkSecretName(name)).toBe(name);
    return true;
  } catch (e) {
    expect(e).toBeInstanceOf(VaultError);
    return false;
  }
}

function refusal(name: string): string {
  try {
    checkSecretName(name);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(name)}`);
}

/** Whether the configuration takes `name` as a secret name (string form and object form). */
function configTakes(name: string): boolean {
  const fail = (): never => {
    throw new Error("refused");
  };
  for (const entry of [name, { secret: name, deliver: "env" }]) {
    try {
      parseCredentials({ API_KEY: entry }, fail);
    } catch {
      return false;
    }
  }
  return true;
}

const nameChar = fc.constantFrom(..."abzAZ09._-".split(""));
const nearName = fc.oneof(
  // names by the rule, and the same with one change
  fc
    .tuple(
      fc.constantFrom("a", "Z", "0", "9"),
      fc.string({ unit: nameChar, maxLength: 130 }),
      fc.constantFrom(
        "",
        "",
        "\n",
        "\r\n",
        " ",
        "\t",
        "é",
        "ſ",
        "\u212a", // Kelvin sign: lower-cases to "k"
        "٣", // Arabic-Indic digit three
        "３", // fullwidth three
        "ａ", // fullwidth a
        "😀",
        "\u0000",
        "\u200b",
        "/",
        "\\",
        "$",
        "\ud800", // a lone surrogate
      ),
      fc.nat(140),
    )
    .map(([first, rest, extra, at]) => {
      const base = first + rest;
      const i = Math.min(at, base.length);
      return base.slice(0, i) + extra + base.slice(i);
    }),
  // leading characters the rule refuses
  fc
    .tuple(fc.constantFrom(".", "_", "-", " ", "é", "\n"), fc.string({ unit: nameChar, maxLength: 10 }))
    .map(([a, b]) => a + b),
  // exactly around the length limit
  fc.integer({ min: 126, max: 131 }).map((n) => "a".repeat(n)),
  fc.integer({ min: 125, max: 130 }).map((n) => `${"a".repeat(n)}😀`),
);

const anyString = fc.oneof(
  fc.string({ unit: "binary", maxLength: 140 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "grapheme-ascii", maxLength: 140 }),
  nearName,
);

describe("checkSecretName: exactly the documented names", () => {
  it("accepts a string iff it is 1 to 128 ASCII letters, digits, '.', '_', '-', starting with a letter or digit", () => {
    fc.assert(
      fc.property(anyString, (name) => {
        expect(accepted(name), JSON.stringify(name)).toBe(isNameByRule(name));
      }),
      { numRuns: 4000 },
    );
  });

  it("takes the same names as the configuration (a stored secret can be named there, and no other)", () => {
    fc.assert(
      fc.property(anyString, (name) => {
        expect(configTakes(name), JSON.stringify(name)).toBe(accepted(name));
      }),
      { numRuns: 1500 },
    );
  });

  it("describes a refused name without repeating it: only its numbers vary", () => {
    // The refusal with every number taken out is one of the fixed sentences, whatever the name.
    const shape = (m: string) => m.replace(/[0-9]+/g, "N");
    const sentences = new Set(["", "a".repeat(200), "-a", "a b", "a  b"].map((n) => shape(refusal(n))));
    expect(sentences.size).toBe(5); // empty, too long, bad start, one other character, several
    fc.assert(
      fc.property(anyString, (name) => {
        fc.pre(!isNameByRule(name));
        const m = refusal(name);
        expect(sentences.has(shape(m)), `${JSON.stringify(name)} → ${m}`).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("checkSecretValue: not empty, not blanks only, at most 64 KiB of UTF-8", () => {
  const blank = fc.constantFrom(
    " ",
    "\t",
    "\n",
    "\r",
    "\v",
    "\f",
    "\u00a0",
    "\u2028",
    "\u3000",
    "\ufeff",
    "\u2003",
  );
  const notBlank = fc.constantFrom("a", "é", "😀", "\u0000", "\u200b", "x");
  const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;

  function valueAccepted(v: string): boolean {
    try {
      expect(checkSecretValue(v)).toBe(v);
      return true;
    } catch (e) {
      expect(e).toBeInstanceOf(VaultError);
      return false;
    }
  }

  it("accepts a value iff it has a character other than whitespace and takes at most 64 KiB", () => {
    const near = fc
      .tuple(
        fc.constantFrom(0, 1, 2, 3, 4),
        fc.integer({ min: MAX_VALUE_BYTES - 6, max: MAX_VALUE_BYTES + 2 }),
        fc.constantFrom("é", "😀", "中", "\ud800"),
      )
      .map(([k, n, wide]) => "a".repeat(Math.max(0, n - k * utf8Bytes(wide))) + wide.repeat(k));
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: "binary", maxLength: 60 }),
          fc.string({ unit: blank, maxLength: 10 }),
          fc
            .tuple(
              fc.string({ unit: blank, maxLength: 5 }),
              notBlank,
              fc.string({ unit: blank, maxLength: 5 }),
            )
            .map((p) => p.join("")),
          near,
        ),
        (v) => {
          const byRule = v.length > 0 && /[^\s]/u.test(v) && utf8Bytes(v) <= MAX_VALUE_BYTES;
          expect(
            valueAccepted(v),
            JSON.stringify(v.length > 80 ? `${v.slice(0, 40)}… (${v.length})` : v),
          ).toBe(byRule);
        },
      ),
      { numRuns: 1500 },
    );
  });
});
