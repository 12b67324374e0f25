// Property tests of values that repeat themselves (src/vault/scrub.ts): in text that repeats such
// a value (`aaaa…` for a value of 200 `a`, `abab…`), every place is the start of an occurrence,
// and the search that goes on from the place after each match's start read each one whole: past
// 8 characters read per character of the text it took all the rest of the text as one occurrence
// (nothing let through, but the server's text after the run was lost). fast-check looks for a
// periodic value and a text of a long run of it (as written and percent-spelled) between other
// text, where what scrubbing leaves outside its markers is not exactly what no occurrence covers.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { percentPattern } from "../../src/vault/percentSpelling.js";
import { ReleasedValues, redactionMarker } from "../../src/vault/scrub.js";
import { formsOf } from "../../src/vault/valueForms.js";
import { expectLinear } from "../helpers/linear.js";

/** The characters of `t` that no occurrence of a form (or percent spelling) of `v` covers. */
function uncoveredBy(v: string, t: string): string {
  const covered = new Uint8Array(t.length);
  for (const f of new Set(formsOf(v)))
    for (let at = t.indexOf(f); at !== -1; at = t.indexOf(f, at + 1)) covered.fill(1, at, at + f.length);
  const sticky = new RegExp(percentPattern(v).source, "y");
  for (let i = 0; i < t.length; i++) {
    sticky.lastIndex = i;
    const m = sticky.exec(t);
    if (m) covered.fill(1, i, i + m[0].length);
  }
  let out = "";
  for (let i = 0; i < t.length; i++) if (!covered[i]) out += t[i];
  return out;
}

const unitChar = fc.constantFrom(..."ab{ xé".split(""));
const other = fc.string({ unit: fc.constantFrom(..."!?.Z-".split("")), minLength: 1, maxLength: 8 });

describe("a value that repeats itself, in text that repeats it", () => {
  it("what is left outside the markers is exactly what no occurrence covers (the text after a long run is kept)", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: unitChar, minLength: 1, maxLength: 3 }),
        fc.integer({ min: 60, max: 300 }),
        fc.integer({ min: 1, max: 3 }),
        fc.boolean(),
        other,
        other,
        (unit, copies, runs, spelled, before, after) => {
          // a value of `copies` units (up to 900 characters: short and long ones), and runs of
          // 40 times as many units: far past the work the search could once spend on them
          const v = unit.repeat(copies);
          const run = unit.repeat(copies * 40);
          const written = spelled ? encodeURIComponent(run) : run;
          const t = `${before}${Array(runs).fill(written).join(after)}${after}`;
          const released = new ReleasedValues();
          released.add("k", v);
          const out = released.scrubText(t);
          expect(
            out.split(redactionMarker("k")).join(""),
            JSON.stringify([unit, copies, runs, spelled]),
          ).toBe(uncoveredBy(v, t));
        },
      ),
      { numRuns: 40 },
    );
  });

  it("the case that lost the text: 100,000 `a` and a value of 200, then `!`", () => {
    const released = new ReleasedValues();
    released.add("k", "a".repeat(200));
    expect(released.scrubText(`x${"a".repeat(100_000)}!`)).toBe("x[redacted:k]!");
    expect(released.scrubText(`x${"%61".repeat(100_000)}!`)).toBe("x[redacted:k]!");
    expect(released.scrubText(`x${"616161".repeat(20_000)}!`)).toBe("x[redacted:k]!");
    const line = released.scrubLine(
      JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text: `${"a".repeat(50_000)}!` } }),
    );
    expect(line).toBe('{"jsonrpc":"2.0","id":1,"result":{"text":"[redacted:k]!"}}');
  });

  it("costs time linear in the text: a run of `ab` for a value of 100 `ab`", () => {
    const released = new ReleasedValues();
    released.add("k", "ab".repeat(100));
    expectLinear((n) => {
      const t = `x${"ab".repeat(n)}!`;
      return () => {
        expect(released.scrubText(t)).toBe("x[redacted:k]!");
      };
    }, 20_000);
  });

  it("a long value's percent spelling, run on and on: time linear in the text and the value together", () => {
    // each spelling found reads on from the value's longest border (one character more), and
    // the places of its characters were shifted along by the whole value at each step: 8 times
    // the value in 8 times the text took 64 times as long
    expectLinear((n) => {
      const released = new ReleasedValues();
      released.add("k", "a".repeat(n));
      const t = `x${"%61".repeat(4 * n)}!`;
      return () => {
        expect(released.scrubText(t)).toBe("x[redacted:k]!");
      };
    }, 2000);
  });
});
