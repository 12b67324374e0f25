// elementTexts (src/relay/batchText.ts): a batch cut into its elements as written, for any
// JSON array (fast-check), and the cases a byte scan could get wrong written out.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { elementTexts } from "../../src/relay/batchText.js";

describe("elementTexts", () => {
  it("cuts out each element exactly as written, whatever is inside strings", () => {
    const text = ` [ {"id":9007199254740993,"s":"a,]}[\\"\\\\"} ,\r\n1e2,"x\\"]" ,[[],{}] , -0 ]\n`;
    expect(elementTexts(text)).toEqual([
      `{"id":9007199254740993,"s":"a,]}[\\"\\\\"}`,
      "1e2",
      `"x\\"]"`,
      "[[],{}]",
      "-0",
    ]);
    expect(elementTexts("[]")).toEqual([]);
    expect(elementTexts('{"id":1}')).toBeNull();
  });

  it("for any JSON array: as many elements, each parsing to the element", () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue()), fc.constantFrom("", " ", "\n", "\r\n\t"), (values, space) => {
        const text = `[${space}${values.map((v) => JSON.stringify(v, null, space ? 1 : 0)).join(`${space},${space}`)}${space}]`;
        const parts = elementTexts(text)!;
        expect(parts.map((p) => JSON.parse(p))).toEqual(JSON.parse(text));
      }),
      { numRuns: 500 },
    );
  });
});
