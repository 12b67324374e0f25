// The `byte` format checked by a loop (src/catalog/byteFormat.ts) gives ajv-formats' verdict on
// every string (its regex has the `m` flag: one base64 line, an empty one included, is enough),
// and checks 8 MiB of base64, where the regex threw RangeError (test/gateway/huge-arguments.test.ts
// through a gateway).
import { createRequire } from "node:module";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isBase64Lines } from "../../src/catalog/byteFormat.js";

const { fullFormats } = createRequire(import.meta.url)("ajv-formats/dist/formats") as {
  fullFormats: { byte: (s: string) => boolean };
};

const PIECES = [
  "A",
  "z",
  "0",
  "+",
  "/",
  "=",
  "==",
  "QUJD",
  "\n",
  "\r",
  "\u2028",
  "\u2029",
  "!",
  " ",
  "é",
  "-",
  "_",
];

describe("format byte", () => {
  it("agrees with ajv-formats on every string", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...PIECES), { maxLength: 16 }), (parts) => {
        const s = parts.join("");
        expect(isBase64Lines(s)).toBe(fullFormats.byte(s));
      }),
      { numRuns: 20_000 },
    );
  });

  it("checks 8 MiB of base64", () => {
    const s = `${"QUJD".repeat(2 * 1024 * 1024)}QQ==`;
    expect(isBase64Lines(s)).toBe(true);
    expect(isBase64Lines(`${s}!`)).toBe(false);
    expect(() => fullFormats.byte(s)).toThrow(RangeError);
  });
});
