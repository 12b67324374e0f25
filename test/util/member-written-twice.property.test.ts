import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { memberWrittenTwice } from "../../src/util/writtenIntegers.js";

/**
 * The duplicate-member classifier against the generator's own knowledge: JSON texts are built
 * from objects given as lists of (key, value) members, keys drawn from a small alphabet so that
 * repeats happen, each written plainly or with JSON escapes (`\u0061`, `\/`), with whitespace
 * around the colon; strings holding braces, quotes and colons sit among them. A text has a member
 * written twice exactly when one of its objects repeats a key as JSON.parse reads it.
 */
interface Built {
  text: string;
  twice: boolean;
}

const spellings = (key: string): fc.Arbitrary<string> =>
  fc.constantFrom(
    JSON.stringify(key),
    `"${[...key].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}"`,
    JSON.stringify(key).replace("/", "\\/"),
  );
const key = fc.constantFrom("a", "b", "a/", "{", ":", '"', "");
const ws = fc.constantFrom("", " ", "\n", "\t ");
const scalar: fc.Arbitrary<Built> = fc
  .oneof(
    fc.constantFrom("1", "true", "null", '"{\\"a\\":1}"', '"a"', '":"', "12345678901234567891"),
    fc.string({ maxLength: 6 }).map((s) => JSON.stringify(s)),
  )
  .map((text) => ({ text, twice: false }));

const value: fc.Arbitrary<Built> = fc.letrec<{ v: Built }>((tie) => ({
  v: fc.oneof(
    { maxDepth: 4 },
    scalar,
    fc.array(tie("v"), { maxLength: 3 }).map((items) => ({
      text: `[${items.map((i) => i.text).join(",")}]`,
      twice: items.some((i) => i.twice),
    })),
    fc.array(fc.tuple(key, tie("v"), ws, ws), { maxLength: 4 }).chain((members) =>
      fc.tuple(...members.map(([k]) => spellings(k))).map((written) => {
        const keys = members.map(([k]) => k);
        const repeats = new Set(keys).size !== keys.length;
        return {
          text: `{${members.map(([, v, w1, w2], i) => `${written[i]}${w1}:${w2}${v.text}`).join(",")}}`,
          twice: repeats || members.some(([, v]) => v.twice),
        };
      }),
    ),
  ),
})).v;

describe("memberWrittenTwice", () => {
  it("says a member is written twice exactly when an object of the text repeats a key as JSON.parse reads it", () => {
    fc.assert(
      fc.property(value, (built) => {
        JSON.parse(built.text); // the generator writes valid JSON
        expect(memberWrittenTwice(built.text)).toBe(built.twice);
      }),
      { numRuns: 3000 },
    );
  });
});
