// Property test of how far settling searches around a marker (src/vault/scrub.ts, settleReach):
// with escapes in the text a form can be spelled longer than it is, and a marker that takes the
// form it runs into must look as far as that spelling reaches. The stretch was 36 times the
// longest form (the most a form can be spelled) whenever the text held one backslash; it is now
// the longest form plus what the text's backslashes can add (10 characters each), the wide stretch
// only for text dense with escapes. fast-check looks for values of brackets and backslashes and a
// text of their forms, escape spellings (once and twice), markers and brackets, where scrubbing
// it gives other than what it gives with the wide stretch: the same text with, far after it, so
// many escapes that the stretch is the wide one.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReleasedValues, redactionMarker } from "../../src/vault/scrub.js";
import { formsOf } from "../../src/vault/valueForms.js";

const unit = fc.constantFrom(...'[]redact:sx_a\\"'.split(""));
const scope = fc.constantFrom("s", "x", "a", "sx");

/** `s` with each character `pick` chooses written as a JSON \uXXXX escape. */
function spelled(s: string, pick: readonly boolean[]): string {
  return [...s]
    .map((c, i) => (pick[i % pick.length] ? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}` : c))
    .join("");
}

const case_ = fc.record({
  values: fc.array(
    fc.tuple(
      // often starting as a marker ends: only such a value can run into a marker's end
      fc
        .tuple(fc.constantFrom("", "]", "s]", "x]"), fc.string({ unit, maxLength: 4 }))
        .map(([a, b]) => a + b)
        .filter((v) => v !== ""),
      scope,
    ),
    { minLength: 1, maxLength: 2 },
  ),
  pieces: fc.array(
    fc.oneof(
      // a form, spelled with escapes once, or twice (the escapes' own characters spelled again)
      fc.tuple(fc.nat(), fc.nat(), fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }), fc.nat(2)),
      fc.constantFrom("[", "]", "x", "s]", "\\n", "\\\\"),
      fc.nat().map((n) => ["marker", n] as const),
    ),
    { maxLength: 8 },
  ),
  // after a value, its last characters again (which the marker written for it takes, with its
  // own end, round after round), spelled with escapes once or twice
  run: fc.tuple(
    fc.nat(5),
    fc.nat(6),
    fc.oneof(fc.constant<boolean[]>([true]), fc.array(fc.boolean(), { minLength: 1, maxLength: 4 })),
    fc.constantFrom(0, 1, 2, 2),
  ),
});

function textOf(
  values: [string, string][],
  pieces: unknown[],
  [n, times, pick, depth]: [number, number, readonly boolean[], number],
): string {
  const out = pieces.map((p) => {
    if (typeof p === "string") return p;
    if (Array.isArray(p) && p[0] === "marker")
      return redactionMarker(values[(p[1] as number) % values.length]![1]);
    const [which, form, pick, times] = p as [number, number, boolean[], number];
    const forms = formsOf(values[which % values.length]![0]);
    let t = forms[form % forms.length]!;
    for (let i = 0; i < times; i++) t = spelled(t, pick);
    return t;
  });
  const [v] = values[0]!;
  let run = v.slice(v.length - (n % v.length) - 1).repeat(times);
  for (let i = 0; i < depth; i++) run = spelled(run, pick);
  return out.join("") + v + run;
}

describe("settling with escapes in the text: as narrow as the escapes allow, nothing lost", () => {
  it("scrubText gives what it gives with the stretch 36 times the longest form", () => {
    fc.assert(
      fc.property(case_, ({ values, pieces, run }) => {
        const released = new ReleasedValues();
        for (const [v, s] of values) released.add(s, v);
        const text = textOf(values, pieces, run);
        // far enough that no stretch around a marker of `text` reaches the escapes, and so many
        // of them that the stretch is the wide one
        const pad = " ".repeat(3 * released.longestForm());
        const wide = `${text}${pad}${"\\u0020".repeat(released.longestForm())}`;
        const scrubbed = released.scrubText(text);
        expect(released.scrubText(wide).startsWith(scrubbed + pad), JSON.stringify({ values, text })).toBe(
          true,
        );
      }),
      {
        numRuns: 400,
        // found with the stretch cut to the longest form (escapes not counted): "[" after the
        // value "][", spelled twice (36 characters), which the marker's "]" makes "][" again
        examples: [[{ values: [["][", "s"]], pieces: [], run: [0, 1, [true], 2] }]],
      },
    );
  });
});
