// The linear-time engine behind `pattern` must answer exactly as JavaScript's RegExp would, on
// every pattern it takes (a wrong answer lets through what the schema forbids, or refuses what
// it allows), and must never be slow. fast-check searches random patterns and strings for a
// difference; sizes stay small so that JavaScript's backtracking side stays quick. The linear
// side is also run on long strings, which would take JavaScript hours on some of these patterns:
// the test's own timeout is the bound there, no timing is asserted.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JS_SPACE, linearRegExp, UncheckablePattern } from "../../src/catalog/linearRegex.js";

/** Characters where JavaScript and RE2 disagree by default, plus astral and lone surrogates. */
const CHARS = [
  "a",
  "b",
  "A",
  "0",
  "_",
  "-",
  " ",
  "\n",
  "\r",
  "\t",
  "\v",
  "\u00a0",
  "\u2028",
  "\ufeff",
  "😀",
  "\ud800",
  "\udc00",
  "/",
  "é",
];

const char = fc.constantFrom(...CHARS);
const input = fc.array(char, { maxLength: 10 }).map((cs) => cs.join(""));

/** A character written in pattern syntax: plain, escaped or as a code. */
const literal = fc.constantFrom(
  "a",
  "b",
  "-",
  " ",
  "😀",
  "é",
  "\\n",
  "\\r",
  "\\t",
  "\\v",
  "\\0",
  "\\/",
  "\\.",
  "\\-",
  "\\x41",
  "\\u0061",
  "\\u{1F600}",
  "\\ud83d\\ude00",
  "\\ud800",
  "\\cJ",
  "\\u00a0",
);
const classEscape = fc.constantFrom("\\d", "\\D", "\\w", "\\W", "\\s", "\\S");
const classItem = fc.oneof(
  literal.filter((l) => l !== "\\-" && l !== "\\."),
  classEscape,
  fc.constantFrom("a-b", "\\0-a", "a-\\u{1F600}", "\\b", "\\-", "\\]", "^"),
);
const characterClass = fc
  .tuple(fc.boolean(), fc.array(classItem, { maxLength: 3 }))
  .map(([neg, items]) => `[${neg ? "^" : ""}${items.join("")}]`);
const quantifier = fc.constantFrom("", "", "*", "+", "?", "{2}", "{0,2}", "{1,}", "*?", "+?", "??", "{1,3}?");

const { pattern } = fc.letrec<{ pattern: string; term: string; atom: string }>((tie) => ({
  pattern: fc
    .array(
      fc.array(tie("term"), { maxLength: 4 }).map((ts) => ts.join("")),
      { minLength: 1, maxLength: 3 },
    )
    .map((alts) => alts.join("|")),
  term: fc.oneof(
    { weight: 5, arbitrary: fc.tuple(tie("atom"), quantifier).map(([a, q]) => a + q) },
    { weight: 1, arbitrary: fc.constantFrom("^", "$", "\\b", "\\B") },
  ),
  atom: fc.oneof(
    { weight: 4, arbitrary: literal },
    { weight: 2, arbitrary: fc.constantFrom(".", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S") },
    { weight: 2, arbitrary: characterClass },
    {
      weight: 1,
      depthSize: "small",
      arbitrary: fc
        .tuple(fc.constantFrom("(", "(?:", "(?<g>"), tie("pattern"))
        .map(([open, inner]) => `${open}${inner})`),
    },
  ),
}));

/** Raw strings of syntax characters: mostly invalid, the rest exercise the parser's corners. */
const raw = fc
  .array(fc.constantFrom(..."()[]{}|^$.*+?\\-/a0,:=!<>bdsSuxk"), { maxLength: 10 })
  .map((cs) => cs.join(""));

function compileBoth(p: string): { js: RegExp; ours: ReturnType<typeof linearRegExp> } | null {
  let js: RegExp;
  try {
    js = new RegExp(p, "u");
  } catch {
    // JavaScript rejects it: so must we (an invalid schema), with the same kind of error.
    expect(() => linearRegExp(p, "u")).toThrow(SyntaxError);
    return null;
  }
  try {
    return { js, ours: linearRegExp(p, "u") };
  } catch (err) {
    // refused (deny first): only ever as UncheckablePattern, never another crash
    expect(err).toBeInstanceOf(UncheckablePattern);
    return null;
  }
}

describe("linear-time patterns", () => {
  it("answer as JavaScript's RegExp does, on every pattern they take", () => {
    fc.assert(
      fc.property(
        fc.oneof({ weight: 4, arbitrary: pattern }, { weight: 1, arbitrary: raw }),
        fc.array(input, { maxLength: 6 }),
        (p, inputs) => {
          const both = compileBoth(p);
          if (!both) return;
          for (const s of inputs) expect([p, s, both.ours.test(s)]).toEqual([p, s, both.js.test(s)]);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("stay fast on long strings, where backtracking would not", () => {
    fc.assert(
      fc.property(pattern, input, (p, unit) => {
        const both = compileBoth(p);
        if (!both || unit === "") return;
        // 4,000 to 40,000 characters; JavaScript is not asked (on `(a+)+$` it would run for hours)
        const long = `${unit.repeat(Math.ceil(4000 / unit.length))}!`;
        expect(typeof both.ours.test(long)).toBe("boolean");
      }),
      { numRuns: 300 },
    );
  });

  it("find the classic catastrophic cases at once", () => {
    for (const p of ["^(a+)+$", "^(a|a)*$", "^(a|aa)+$", "^(\\w+\\s?)*$", "^([a-z]+)*[0-9]$", "(x+x+)+y"]) {
      const re = linearRegExp(p, "u");
      expect(re.test(`${"a".repeat(50_000)}!`)).toBe(false);
    }
  });

  it("spell `\\s` exactly as JavaScript does, on every code point", () => {
    const js = /^\s$/u;
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      const ours = JS_SPACE.some(([lo, hi]) => cp >= lo && cp <= hi);
      if (ours !== js.test(String.fromCodePoint(cp))) expect(cp.toString(16)).toBe("a space mismatch");
    }
  });

  it("refuse what cannot be carried over exactly, and say what it is", () => {
    for (const [p, what] of [
      ["a(?=b)", "a lookahead"],
      ["(?<!a)b", "a lookbehind"],
      ["(a)\\1", "a backreference"],
      ["(?<n>a)\\k<n>", "a backreference"],
      ["\\p{L}", "a Unicode property escape"],
      ["a{1001}", "a repetition count above 1000"],
      ["a{99999999999999999999}", "a repetition count above 1000"],
      ["(?:\\S{1000}){1000}", "the linear-time engine cannot take"],
    ] as const) {
      expect(() => linearRegExp(p, "u")).toThrow(UncheckablePattern);
      expect(() => linearRegExp(p, "u")).toThrow(what);
    }
    expect(() => linearRegExp("a", "")).toThrow(UncheckablePattern);
  });

  it("give each pattern its own name: ajv shares compiled patterns by it", () => {
    expect(linearRegExp("a+", "u").toString()).not.toBe(linearRegExp("a*", "u").toString());
  });
});
