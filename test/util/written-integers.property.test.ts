import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { respelledIntegerIn } from "../../src/util/writtenIntegers.js";
import { sameNumber } from "../helpers/numbers.js";

/**
 * The respelled-number classifier against its definition: a number token of the text is
 * respelled exactly when JSON.stringify of what JSON.parse read does not write the same number.
 * The reference reads every number token of the text with a plain tokenizer; strings holding digits
 * never count.
 */
const bigDigits = fc
  .tuple(fc.boolean(), fc.stringMatching(/^[1-9][0-9]{0,24}$/))
  .map(([neg, d]) => `${neg ? "-" : ""}${d}`);
const leaf = fc.oneof(
  bigDigits.map((t) => ({ text: t })),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => ({ text: JSON.stringify(d) })),
  fc.stringMatching(/^[0-9a-z]{0,30}$/).map((s) => ({ text: JSON.stringify(s) })),
  fc
    .constantFrom(
      "true",
      "null",
      "-0",
      "1e21",
      "12345678901234567890e0",
      "12345678901234.567",
      "9007199254740993.0",
      "9.007199254740993e15",
      "0.30000000000000004",
      "1.5e300",
    )
    .map((t) => ({ text: t })),
);
const json: fc.Arbitrary<string> = fc.letrec((tie) => ({
  value: fc.oneof(
    { maxDepth: 3 },
    leaf.map((l) => l.text),
    fc.array(tie("value") as fc.Arbitrary<string>, { maxLength: 4 }).map((a) => `[${a.join(", ")}]`),
    fc
      .array(fc.tuple(fc.stringMatching(/^[a-z0-9]{1,20}$/), tie("value") as fc.Arbitrary<string>), {
        maxLength: 4,
      })
      .map((m) => `{${m.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`),
  ),
})).value as fc.Arbitrary<string>;

function referenceRespelled(text: string): string[] {
  const out: string[] = [];
  // number tokens outside strings (the text is valid JSON), each compared exactly with what
  // JSON.stringify writes for the double it reads as (a fraction of big integers each side)
  const re = /"(?:[^"\\]|\\.)*"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/g;
  for (const m of text.matchAll(re)) {
    const t = m[0];
    if (t.startsWith('"')) continue;
    const read = Number(t);
    if (!Number.isFinite(read)) continue;
    if (!sameNumber(t, String(read))) out.push(t);
  }
  return out;
}

describe("respelledIntegerIn", () => {
  it("finds a respelled number exactly when one is written, and names one of them", () => {
    fc.assert(
      fc.property(json, (text) => {
        const expected = referenceRespelled(text);
        const found = respelledIntegerIn(text, JSON.parse(text));
        if (expected.length === 0) expect(found).toBeNull();
        else {
          expect(found).not.toBeNull();
          expect(expected).toContain(found?.written);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("names the field the integer sits in", () => {
    const text = '{"a":[1,{"b":9007199254740993}],"c":"9007199254740993"}';
    expect(respelledIntegerIn(text, JSON.parse(text))).toEqual({
      path: ["a", 1, "b"],
      written: "9007199254740993",
    });
    expect(respelledIntegerIn('{"s":"12345678901234567890"}', { s: "12345678901234567890" })).toBeNull();
    expect(respelledIntegerIn("[9007199254740992]", [9007199254740992])).toBeNull();
  });
});
