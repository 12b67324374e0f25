// Property tests of cutting text at a length: never half a surrogate pair (a lone surrogate goes
// into a signed decision, the audit and the terminal), never longer than asked, never shorter
// than it must be.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isWellFormedString } from "../../src/util/canonical.js";
import { cutText, decisionReason, wellFormed } from "../../src/util/cut.js";

describe("cutText", () => {
  it("cuts a well-formed string to a well-formed prefix of at most max units, dropping at most the one unit of a split pair", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 40 }).filter(isWellFormedString),
        fc.integer({ min: 1, max: 45 }),
        (s, max) => {
          const out = cutText(s, max);
          expect(s.startsWith(out)).toBe(true);
          expect(out.length).toBeLessThanOrEqual(max);
          expect(out.length).toBeGreaterThanOrEqual(Math.min(s.length, max - 1));
          expect(isWellFormedString(out)).toBe(true);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("the case of the report: 499 units, then an emoji across the 500th", () => {
    expect(cutText(`${"a".repeat(499)}😀`, 500)).toBe("a".repeat(499));
    expect(cutText(`${"a".repeat(498)}😀x`, 500)).toBe(`${"a".repeat(498)}😀`);
  });
});

describe("decisionReason", () => {
  it("is well formed and at most 500 units whatever it is given, lone surrogates included", () => {
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
          maxLength: 700,
        }),
        (s) => {
          const out = decisionReason(s);
          expect(out.length).toBeLessThanOrEqual(500);
          expect(isWellFormedString(out)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
    expect(wellFormed("a\uD83Db\uDE00")).toBe("a\uFFFDb\uFFFD");
  });
});
