// Property test that a released value holding a character JSON.stringify escapes (`"`, `\`, a
// control), percent-encoded with some of its characters kept as themselves, is caught inside one to
// six levels of JSON text in a server's message and on stderr (src/vault/percentSpelling.ts,
// jsonLevels). Such a character kept as itself is written `\"` inside a JSON string, `\\\"` one
// level down, and so on; the percent spelling looked for it only as itself, and a message with no
// `\u` is not read for its escapes, so `Zq7%22w"…` (its first `"` escaped, its second kept) went
// to the client as `Zq7%22w\"…`, readable after one JSON.parse and a URL decoding. fast-check
// looks for a value, a choice of which characters stay themselves, and a depth at which some level
// still holds the value once read back.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReleasedValues } from "../../src/vault/scrub.js";
import { inLevels, levelsOf, valueWithEscaped } from "./jsonLevelsKit.js";

const MARK = "[redacted:api]";
const plain = fc.constantFrom(..."abcXYZ019-_ é/+=?&<>中".split(""));
const value = valueWithEscaped(plain);
// (no `%` and no hex digit beside the value: a `%` before it could read its first digits otherwise)
const around = fc.string({ unit: fc.constantFrom(..."ghijk -_<p>".split("")), maxLength: 8 });
const picks = fc.array(fc.nat(), { minLength: 1, maxLength: 12 });
const LONG_START = "kLm3Np8QrS2tUv9WxY4z".repeat(13);

/** `value` with each character percent-encoded (UTF-8, hex case picked) or kept, as `picks` choose. */
function mixed(value: string, picks: number[]): string {
  return [...value]
    .map((c, i) => {
      const pick = picks[i % picks.length]!;
      if (pick % 2 === 0) return c;
      return [...Buffer.from(c, "utf8")]
        .map((b) => {
          const h = b.toString(16).padStart(2, "0");
          return `%${(pick >> 1) % 2 === 0 ? h : h.toUpperCase()}`;
        })
        .join("");
    })
    .join("");
}

/** `t` URL-decoded byte by byte (a `%XX` as its byte), as UTF-8 bytes in latin1. */
function urlDecoded(t: string): string {
  return Buffer.from(t, "utf8")
    .toString("latin1")
    .replace(/%([0-9a-fA-F]{2})/g, (_m, h) => String.fromCharCode(Number.parseInt(h, 16)));
}

describe('a value holding `"`, `\\` or a control, percent-encoded with some characters kept, in JSON text', () => {
  it("property: no level of a message or a stderr line holds it once scrubbed and URL-decoded", () => {
    fc.assert(
      fc.property(
        value,
        picks,
        fc.integer({ min: 1, max: 6 }),
        around,
        around,
        (v, p, levels, before, after) => {
          const r = new ReleasedValues();
          r.add("api", v);
          const written = mixed(v, p);
          let inner = `${before}${written}${after}`;
          for (let k = 1; k < levels; k++) inner = JSON.stringify({ text: inner });
          const line = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text: inner } });
          const value8 = Buffer.from(v, "utf8").toString("latin1");
          const message = r.scrubLine(line);
          expect(message).toContain(MARK);
          for (const text of levelsOf(message, levels))
            expect(urlDecoded(text), message).not.toContain(value8);
          const stderr = r.scrubText(line);
          expect(stderr).toContain(MARK);
          for (const text of levelsOf(stderr, levels)) expect(urlDecoded(text), stderr).not.toContain(value8);
        },
      ),
      {
        numRuns: 400,
        // reached the client before: the first `"` escaped, the second kept, one level
        examples: [
          ['Zq7"w\\ab"cd-secret', [1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 1, "", ""],
        ],
      },
    );
  });

  it("property: a long value (searched without a regex) so written, up to three levels", () => {
    fc.assert(
      fc.property(value, picks, fc.integer({ min: 1, max: 3 }), around, (v0, p, levels, before) => {
        // past 256 characters: src/vault/longValues.ts (not a run of one character: text of a
        // value that repeats itself so is searched to a bound, and then the rest of it is taken)
        const v = `${LONG_START}${v0}`;
        const r = new ReleasedValues();
        r.add("api", v);
        const line = inLevels(`${before}${mixed(v, [0, ...p])}!`, levels);
        const value8 = Buffer.from(v, "utf8").toString("latin1");
        const message = r.scrubLine(line);
        for (const text of levelsOf(message, levels)) expect(urlDecoded(text)).not.toContain(value8);
        for (const text of levelsOf(r.scrubText(line), levels))
          expect(urlDecoded(text)).not.toContain(value8);
      }),
      { numRuns: 100 },
    );
  });
});
