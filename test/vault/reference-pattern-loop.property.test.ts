// The loop of a reference's `&` written again (src/vault/referencePattern.ts, AMPERSAND): with an
// empty alternative last, which V8 compiles without unrolling it, it must find exactly what the
// loop as first written, `&(?:(?:amp|AMP);?|#0*38;?|#[xX]0*26;?){0,3}`, found: every match, from
// every place (as scrubbing searches, src/vault/scrub.ts eachMatch), with the same start and the
// same end. fast-check spells short values every way the pattern reads (references with their
// `&` written again up to four times, one more than it reads, URL escapes escaped again, names,
// legacy names without `;`) among the characters those spellings are made of.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allNames, allPairNames, LEGACY_NAMES } from "../../src/vault/htmlNames.js";
import { AMPERSAND, referencePattern } from "../../src/vault/referencePattern.js";

/** The loop as first written: the reference implementation. */
const FIRST_WRITTEN = "&(?:(?:amp|AMP);?|#0*38;?|#[xX]0*26;?){0,3}";

/** Every match of `source` in `text` from every place: [start, end] of each, in order. */
function everyMatch(source: string, text: string): [number, number][] {
  const re = new RegExp(source, "g");
  const out: [number, number][] = [];
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    out.push([m.index, m.index + m[0].length]);
    re.lastIndex = m.index + 1;
  }
  return out;
}

const NAMES_OF = new Map<number, string[]>();
for (const [name, cp] of allNames()) NAMES_OF.set(cp, [...(NAMES_OF.get(cp) ?? []), name]);
const PAIRS = [...new Set([...allPairNames().values()].map(([a, b]) => String.fromCodePoint(a, b)))];

// characters with names (legacy ones too), with several UTF-8 bytes, and those of the spellings
const valueChar = fc.constantFrom(..."a&#;%2x5éÅ©½€中😀<>".split(/(?:)/u), ...PAIRS.slice(0, 6));
const value = fc.array(valueChar, { minLength: 1, maxLength: 3 }).map((a) => a.join(""));
/** What a reference's `&` is written as, read once more each (the pattern reads three). */
const ampAgain = fc.constantFrom("amp;", "AMP;", "amp", "#38;", "#038", "#x26;", "#X026;", "#x26");

/** One spelling of `c`, as `pick` chooses among those the pattern reads (and a few it does not). */
function spell(c: string, pick: number, again: string[]): string {
  const cp = c.codePointAt(0)!;
  const amp = `&${again.join("")}`;
  const names = NAMES_OF.get(cp) ?? [];
  const name = names[(pick >> 4) % Math.max(1, names.length)];
  const semi = (pick >> 3) % 2 === 0 ? ";" : "";
  const bytes = [...Buffer.from(c, "utf8")].map((b) => b.toString(16).padStart(2, "0"));
  const escapes = "25".repeat((pick >> 5) % 6);
  switch (pick % 8) {
    case 1:
      return `${amp}#${"0".repeat((pick >> 4) % 3)}${cp}${semi}`;
    case 2:
      return `${amp}#${(pick >> 4) % 2 ? "x" : "X"}${cp.toString(16).toUpperCase()}${semi}`;
    case 3:
      return name === undefined ? c : `${amp}${name}${LEGACY_NAMES.includes(name) ? semi : ";"}`;
    case 4:
      return bytes.map((b) => `%${escapes}${b}`).join("");
    case 5:
      return bytes.map((b, i) => `${i === 0 ? `${amp}#37;` : "&percnt;"}${escapes}${b}`).join("");
    default:
      return c;
  }
}

/** Text around and between spellings: pieces of references, escapes and names that may join them. */
const noise = fc
  .array(fc.constantFrom("&", "#", ";", "amp", "x", "0", "%", "25", "a", "2", "&#", "&amp", " "), {
    maxLength: 4,
  })
  .map((a) => a.join(""));

const spelledText = fc
  .tuple(value, fc.array(fc.tuple(fc.nat(), fc.array(ampAgain, { maxLength: 4 })), { minLength: 1 }))
  .chain(([v, picks]) =>
    fc.tuple(
      fc.constant(v),
      fc.tuple(noise, noise, fc.array(noise, { maxLength: 3 })).map(([before, after, between]) => {
        const chars = [...v];
        const written = chars.map((c, i) => {
          const [pick, again] = picks[i % picks.length]!;
          return spell(c, pick, again) + (between[i] ?? "");
        });
        return `${before}${written.join("")}${after}`;
      }),
    ),
  );

describe("a reference's `&` read up to three times more, by a loop V8 need not unroll", () => {
  it("the pattern is the one first written but for the empty alternative", () => {
    expect(AMPERSAND.replace("|){0,3}", "){0,3}")).toBe(FIRST_WRITTEN);
    expect(referencePattern("é").split(AMPERSAND).length).toBeGreaterThan(2);
  });

  it("property: every match, from every place, as the loop first written finds it", () => {
    fc.assert(
      fc.property(spelledText, fc.array(noise, { maxLength: 3 }), ([v, text], more) => {
        const source = referencePattern(v);
        const first = source.split(AMPERSAND).join(FIRST_WRITTEN);
        for (const t of [text, more.join(text)])
          expect(everyMatch(source, t), JSON.stringify([v, t])).toEqual(everyMatch(first, t));
      }),
      // (each case compiles a value's pattern both ways: the loop first written, unrolled by V8,
      // takes some 10 ms for three characters)
      { numRuns: 300 },
    );
  });

  it("a value spelled with its `&` written four times more is not read (three is the bound)", () => {
    const source = referencePattern("a");
    // (and the `a` of each `amp` as itself)
    expect(everyMatch(source, "&amp;amp;amp;#97;")).toEqual([
      [0, 17],
      [1, 2],
      [5, 6],
      [9, 10],
    ]);
    expect(everyMatch(source, "&amp;amp;amp;amp;#97;")).toEqual([
      [1, 2],
      [5, 6],
      [9, 10],
      [13, 14],
    ]);
  });
});
