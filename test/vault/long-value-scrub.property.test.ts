// Property tests of the search for long released values (src/vault/longValues.ts), which builds
// no regex from the value: fast-check looks for a value and a surrounding text where
// - the search finds less than the regexes of src/vault/scrub.ts and src/vault/percentSpelling.ts
//   find for the same (short) value, or finds something that is not a form of it;
// - a form of a long value (up to the vault's 64 KiB) survives ReleasedValues' scrubbing.
// And text built to make the percent search run long (a hostile server's): it ends, and what it
// could not search to the end is replaced, not let through.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LONG_VALUE, LongValue } from "../../src/vault/longValues.js";
import { escapeRegExp, percentPattern } from "../../src/vault/percentSpelling.js";
import { ReleasedValues } from "../../src/vault/scrub.js";
import { formsOf } from "../../src/vault/valueForms.js";

const MARK = "[redacted:big]";

const unit = fc.constantFrom(
  ..."abcXYZ019".split(""),
  ..."\\^$.*+?()[]{}|/-%".split(""),
  '"',
  " ",
  "\n",
  "=",
  "&",
  "é",
  "中",
  "😀",
  "\u2028",
  "<",
);
const text = fc.string({ unit: fc.oneof(unit, fc.string({ minLength: 1, maxLength: 1 })), maxLength: 40 });

const hexOf = (v: string) => {
  const h = Buffer.from(v, "utf8").toString("hex");
  return [h, h.toUpperCase()];
};

/** `v` percent-spelled with each character chosen by `pick` to be itself, `%xx`, `%XX` (or "+" for a space). */
function percentMix(v: string, pick: number[]): string {
  let out = "";
  let i = 0;
  for (const c of v) {
    const way = pick[i++ % pick.length]!;
    const lone = c.length === 1 && c.charCodeAt(0) >= 0xd800 && c.charCodeAt(0) <= 0xdfff;
    if (way === 0 || lone) out += c;
    else if (c === " " && way === 3) out += "+";
    else
      out += [...Buffer.from(c, "utf8")]
        .map((b) => {
          const h = b.toString(16).padStart(2, "0");
          return `%${way === 1 ? h : h.toUpperCase()}`;
        })
        .join("");
  }
  return out;
}

/** The forms of `v` before any JSON escape, computed here: raw, base64, URL-encoded, hex, percent-mixed. */
function unescapedForms(v: string, pick: number[]): string[] {
  const b64 = Buffer.from(v, "utf8").toString("base64");
  const url = b64.replaceAll("+", "-").replaceAll("/", "_");
  return [
    v,
    b64,
    url,
    b64.replace(/=+$/, ""),
    url.replace(/=+$/, ""),
    encodeURIComponent(v),
    new URLSearchParams({ v }).toString().slice(2),
    ...hexOf(v),
    // a mix whose characters JSON escapes would be another spelling again (not searched)
    ...[percentMix(v, pick)].filter((m) => JSON.stringify(m) === `"${m}"`),
  ];
}

/** What the regexes find of `v` in `t`: the alternation of its written forms, its percent pattern, its hex by indexOf. */
function regexFinds(v: string, t: string): [number, number][] {
  const hex = hexOf(v);
  const written = formsOf(v).filter((f) => !hex.includes(f));
  const out: [number, number][] = [];
  const alternation = new RegExp(
    [...new Set(written)]
      .sort((a, b) => b.length - a.length)
      .map(escapeRegExp)
      .join("|"),
    "g",
  );
  for (const re of [alternation, new RegExp(percentPattern(v).source, "g")])
    for (const m of t.matchAll(re)) out.push([m.index, m.index + m[0].length]);
  for (const h of hex)
    for (let at = t.indexOf(h); at !== -1; at = t.indexOf(h, at + 1)) out.push([at, at + h.length]);
  return out;
}

function covered(spans: [number, number][], length: number): Uint8Array {
  const c = new Uint8Array(length);
  for (const [s, e] of spans) c.fill(1, s, e);
  return c;
}

describe("the search of long values without a regex", () => {
  it("finds all the regexes find, for values short enough for them, and only forms of the value", () => {
    fc.assert(
      fc.property(
        fc.string({ unit, minLength: 1, maxLength: 24 }),
        text,
        text,
        fc.nat(20),
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 8 }),
        (v, before, after, which, pick) => {
          const forms = formsOf(v);
          const embedded = which < forms.length ? forms[which]! : percentMix(v, pick);
          const t = before + embedded + after;
          const long = new LongValue(v, "big", forms);
          const written = long.writtenOccurrences(t);
          const percent = long.percentOccurrences(t);
          // (each check below gathers what fails and asserts once: an expect() per position and
          // per form cost vitest more than the search under test)
          const found = written.map((f) => t.slice(f.start, f.end));
          expect(found.filter((f) => !forms.includes(f))).toEqual([]);
          const whole = new RegExp(`^(?:${percentPattern(v).source})$`);
          const spelled = percent.map((f) => t.slice(f.start, f.end));
          expect(spelled.filter((f) => !whole.test(f))).toEqual([]);
          const mine = covered(
            [...written, ...percent].map((f) => [f.start, f.end]),
            t.length,
          );
          const theirs = covered(regexFinds(v, t), t.length);
          const missed: number[] = [];
          for (let i = 0; i < t.length; i++) if (theirs[i] && mine[i] !== 1) missed.push(i);
          expect(missed, `positions of ${JSON.stringify(t)} the regexes find`).toEqual([]);
          // the embedded form itself is found, also when a spelling that starts before it runs into
          // it (before "{", value "{{" and its spelling "{%7b": "{{" and then "{%7b"; a search that
          // went on past a match's end, as a global regex does, left "%7b")
          expect(mine.subarray(before.length, before.length + embedded.length).every((b) => b === 1)).toBe(
            true,
          );
        },
      ),
      { numRuns: 800 },
    );
  });

  const scrubbedOfEveryForm = (v: string, before: string, after: string, pick: number[]) => {
    const r = new ReleasedValues();
    r.add("big", v);
    const forms = [...formsOf(v), percentMix(v, pick)];
    // in text, every form; in a JSON line, the forms before JSON escapes (which the line adds)
    // (the forms that survive gathered, asserted once: an expect() per part and form cost vitest
    // more than the scrubbing under test)
    const survivors = (out: string) =>
      out.split(MARK).reduce((n, part) => n + forms.filter((g) => part.includes(g)).length, 0);
    for (const f of forms) {
      const plain = r.scrubText(before + f + after);
      expect(plain).toContain(MARK);
      expect(survivors(plain), `a form of ${v.length} characters survives`).toBe(0);
    }
    for (const f of unescapedForms(v, pick)) {
      const line = JSON.stringify({ jsonrpc: "2.0", id: 3, result: { text: before + f + after } });
      const scrubbed = r.scrubLine(line);
      expect(JSON.parse(scrubbed).id).toBe(3);
      expect(scrubbed).toContain(MARK);
      expect(survivors(scrubbed), `a form of ${v.length} characters survives`).toBe(0);
    }
    // text without the value is left as it is
    expect(r.scrubText(before + after)).toBe(before + after);
  };

  it("every form of a long value, in any text, is scrubbed by ReleasedValues", () => {
    fc.assert(
      fc.property(
        fc.string({ unit, minLength: LONG_VALUE + 1, maxLength: 700 }),
        text,
        text,
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 8 }),
        (v, before, after, pick) => {
          fc.pre(!(before + after).includes(v));
          scrubbedOfEveryForm(v, before, after, pick);
        },
      ),
      { numRuns: 12 },
    );
  });

  it("up to the vault's 64 KiB (few runs)", () => {
    fc.assert(
      fc.property(
        fc.string({ unit, minLength: 16, maxLength: 64 }),
        fc.integer({ min: 5_000, max: 16_000 }),
        text,
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 8 }),
        (seed, length, around, pick) => {
          // a value that does not repeat: the seed and a counter, to the length wanted (at most 64 KiB of UTF-8)
          let v = "";
          for (let i = 0; v.length < length; i++) v += `${seed}${i}`;
          while (Buffer.byteLength(v) > 65_536) v = v.slice(0, -1);
          scrubbedOfEveryForm(v, around, around, pick);
        },
      ),
      { numRuns: 3 },
    );
  });

  it("a quarter megabyte built to make the percent search run long ends, and lets no form through", () => {
    const v = `${"a".repeat(2000)}b`;
    const r = new ReleasedValues();
    r.add("big", v);
    // every "a" starts a spelling that runs 2,000 characters before it fails; the value follows
    const hostile = `${"a%61".repeat(64_000)} then ${encodeURIComponent(v)}`;
    const out = r.scrubText(hostile);
    for (const part of out.split(MARK)) {
      expect(part.includes(v)).toBe(false);
      expect(part).not.toContain("a".repeat(2000));
    }
    // the message still goes out, JSON with its id
    const line = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text: hostile } });
    expect(JSON.parse(r.scrubLine(line)).id).toBe(1);
  });
});
