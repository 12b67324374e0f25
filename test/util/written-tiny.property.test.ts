import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { mayHoldLongInteger, respelledIntegerIn } from "../../src/util/writtenIntegers.js";
import { sameNumber, withNumber } from "../helpers/numbers.js";

/**
 * The respelled-number look for numbers near and below the smallest normal double (about
 * 2.2e-308): a token is respelled exactly when the number JSON.stringify writes for what
 * JSON.parse read is not the token's exact value (the reference: both as fractions of big
 * integers, test/helpers/numbers.ts). `1e-400` and `4.9e-325` read as 0, `1.23456e-320` as 1.2347e-320, and a short
 * mantissa above that range is a double's own spelling; zero however written (`-0.0e-999`) is 0.
 */
const mantissa = fc
  .tuple(
    fc.boolean(),
    fc.stringMatching(/^(0|[1-9][0-9]{0,5})$/),
    fc.option(fc.stringMatching(/^[0-9]{1,6}$/), { nil: undefined }),
  )
  .map(([neg, int, frac]) => `${neg ? "-" : ""}${int}${frac === undefined ? "" : `.${frac}`}`);
const tiny = fc
  .tuple(
    mantissa,
    fc.constantFrom("e", "E"),
    fc.constantFrom("-", "-0", "-00"),
    fc.integer({ min: 280, max: 1100 }),
  )
  .map(([m, e, sign, exp]) => `${m}${e}${sign}${exp}`);

const BASE = { name: "pay", arguments: { a: [1, { b: "x" }], c: { d: 2 } } };

function expected(token: string): boolean {
  const read = Number(token);
  // beyond the double range: read as ±Infinity, written as null, another value whatever it was
  return !Number.isFinite(read) || !sameNumber(token, String(read));
}

describe("respelledIntegerIn, numbers that read as 0 or a subnormal", () => {
  it("finds such a token exactly when what is re-serialised is another number, where it is written", () => {
    fc.assert(
      fc.property(tiny, fc.array(fc.nat(6), { maxLength: 4 }), (token, steps) => {
        const at = withNumber(BASE, steps);
        const text = at.text(token);
        expect(mayHoldLongInteger(text)).toBe(true);
        const found = respelledIntegerIn(text, JSON.parse(text));
        if (expected(token)) expect(found).toEqual({ path: at.path, written: token });
        else expect(found).toBeNull();
      }),
      { numRuns: 3000 },
    );
  });

  it("the prefilter misses no respelled token, whatever the blanks around it and the hex text beside it", () => {
    const huge = fc
      .tuple(mantissa, fc.constantFrom("e", "E", "e+", "E+"), fc.integer({ min: 294, max: 1100 }))
      .map(([m, e, exp]) => `${m}${e}${exp}`);
    const blank = fc.stringMatching(/^[ \t\n\r]{0,3}$/);
    const hexNoise = fc.stringMatching(/^[0-9a-f]{0,80}$/);
    fc.assert(
      fc.property(
        fc.oneof(tiny, huge),
        fc.array(fc.nat(6), { maxLength: 4 }),
        blank,
        blank,
        hexNoise,
        (token, steps, before, after, noise) => {
          const at = withNumber({ ...BASE, noise }, steps);
          // blanks after every separator, as a pretty-printer or a hostile server may write them
          const text = at
            .text(token)
            .replace(/([:,[])/g, `$1${before}`)
            .replace(/([\]}])/g, `${after}$1`);
          if (expected(token)) expect(mayHoldLongInteger(text), text).toBe(true);
          expect(JSON.parse(text)).toBeDefined();
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("the cases named in docs/security.md", () => {
    const of = (t: string) => respelledIntegerIn(`{"x":${t}}`, JSON.parse(`{"x":${t}}`));
    expect(of("1e-400")).toEqual({ path: ["x"], written: "1e-400" });
    expect(of("4.9e-325")).toEqual({ path: ["x"], written: "4.9e-325" });
    expect(of("-0.0e-999")).toBeNull(); // zero exactly, and 0 is what goes out
    expect(of("5e-324")).toBeNull(); // the smallest subnormal prints so
    expect(of("1e-300")).toBeNull();
    expect(of("2.5e-308")).toBeNull();
    expect(of("1.23456e-320")).toEqual({ path: ["x"], written: "1.23456e-320" }); // a subnormal printed 1.2347e-320
    expect(of("7e-324")).toEqual({ path: ["x"], written: "7e-324" }); // read as 5e-324
    // strings are never numbers
    expect(respelledIntegerIn('{"s":"1e-400"}', { s: "1e-400" })).toBeNull();
  });

  it("a number beyond the double range (read as ±Infinity, written as null) is respelled; the largest double is not", () => {
    const of = (t: string) => respelledIntegerIn(`{"x":[${t}]}`, JSON.parse(`{"x":[${t}]}`));
    expect(of("1e400")).toEqual({ path: ["x", 0], written: "1e400" });
    expect(of("-1.8e308")).toEqual({ path: ["x", 0], written: "-1.8e308" });
    expect(of("2E+999")).toEqual({ path: ["x", 0], written: "2E+999" });
    expect(of("999999999999999e294")).toEqual({ path: ["x", 0], written: "999999999999999e294" });
    expect(of("1.7976931348623157e308")).toBeNull(); // the largest double prints so
    expect(of("1e300")).toBeNull();
  });

  it("the prefilter lets through nothing but a 16-run of digits and points, or a digit and an exponent of three digits (-100 and smaller, or 100 and larger: 1e400 reads as Infinity)", () => {
    expect(mayHoldLongInteger('{"a":1e-99,"b":"x"}')).toBe(false);
    expect(mayHoldLongInteger('{"a":1e-100}')).toBe(true);
    expect(mayHoldLongInteger('{"a":1.5e+99}')).toBe(false);
    expect(mayHoldLongInteger('{"a":1.5E99}')).toBe(false);
    expect(mayHoldLongInteger('{"a":1e400}')).toBe(true);
    expect(mayHoldLongInteger('{"a":1.5e+300}')).toBe(true);
    expect(mayHoldLongInteger('{"name":"release-2024","a":1}')).toBe(false);
    // a digit, e and three digits inside hex text is no number: a SHA-256 digest holds one about
    // every other time, and each such message would be scanned token by token for nothing
    expect(mayHoldLongInteger('{"digest":"sha256:9ae5e1234f0c3e400ab","a":1}')).toBe(false);
    expect(mayHoldLongInteger('{"etag":"5e123","list":["0x1e400"]}')).toBe(false);
    // a number token however it is placed: after a blank, a comma, a bracket, or the whole text
    for (const text of [
      '{"a": \t\n-1.5e+300}',
      "[1,\r\n 2e-400]",
      "[3e999]",
      "1e400",
      '{"a":[0, -0.5E-999 ]}',
    ])
      expect(mayHoldLongInteger(text), text).toBe(true);
  });
});
