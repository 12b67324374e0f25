import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decimalValue } from "../../src/util/writtenIntegers.js";
import { fraction, sameNumber } from "../helpers/numbers.js";

/**
 * decimalValue names a JSON number token's exact value: two tokens get the same text exactly when
 * they are the same number. The reference reads each token as a fraction of big integers
 * (mantissa digits × 10^(exponent − digits after the point)) and compares them cross-multiplied.
 */
const token = fc
  .tuple(
    fc.boolean(),
    fc.stringMatching(/^(0|[1-9][0-9]{0,20})$/),
    fc.option(fc.stringMatching(/^[0-9]{1,12}$/), { nil: undefined }),
    fc.option(
      fc.tuple(fc.constantFrom("e", "E"), fc.constantFrom("", "+", "-"), fc.integer({ min: 0, max: 40 })),
      {
        nil: undefined,
      },
    ),
  )
  .map(
    ([neg, int, frac, exp]) =>
      `${neg ? "-" : ""}${int}${frac === undefined ? "" : `.${frac}`}${exp === undefined ? "" : `${exp[0]}${exp[1]}${exp[2]}`}`,
  );

describe("decimalValue", () => {
  it("is the same text exactly for the same number", () => {
    fc.assert(
      fc.property(token, token, (a, b) => {
        expect(decimalValue(a) === decimalValue(b)).toBe(sameNumber(a, b));
      }),
      { numRuns: 3000 },
    );
  });

  it("reads every spelling of one number alike (trailing zeros, the point moved into the exponent)", () => {
    fc.assert(
      fc.property(token, fc.integer({ min: 0, max: 5 }), (t, zeros) => {
        const { n, d } = fraction(t);
        // the same number written as an integer over a power of ten: n/d = (n·10^k/d)·10^-k
        const k = d.toString().length - 1 + zeros;
        const scaled = (n * 10n ** BigInt(k)) / d;
        expect(decimalValue(`${scaled}e-${k}`)).toBe(decimalValue(t));
      }),
      { numRuns: 2000 },
    );
    expect(decimalValue("-0.0e5")).toBe("0");
    expect(decimalValue("12345678901234.567")).not.toBe(decimalValue(String(Number("12345678901234.567"))));
    expect(decimalValue("0.30000000000000004")).toBe(decimalValue(String(0.1 + 0.2)));
  });
});
