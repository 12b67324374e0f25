// The drill shows a server's text on one line (oneLine, src/onboard/drill.ts). It used
// `s.replace(/\s*\n\s*/g, " ")`, quadratic in a run of white space without a line break (160,000
// spaces: 16 s; the text is the server's). The loop that replaced it reads as the regex did.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { oneLine } from "../../src/onboard/drill.js";
import { cutText } from "../../src/util/cut.js";

const byRegex = (s: string) => cutText(s.replace(/\s*\n\s*/g, " "), 400);

describe("the drill's one-line view of a server's text", () => {
  it("reads as the regex did, on any text", () => {
    const piece = fc.constantFrom(
      " ",
      "\n",
      "\t",
      "\r\n",
      "\u00a0",
      "\u2028",
      "a",
      "b\n",
      "x".repeat(60),
      "😀",
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (parts) => {
        const s = parts.join("");
        expect(oneLine(s)).toBe(byRegex(s));
      }),
      { numRuns: 20_000 },
    );
  });

  it("a run of 4 million spaces without a line break, then one", () => {
    const s = `${" ".repeat(4 * 1024 * 1024)}x\n  y`;
    expect(oneLine(s)).toBe(cutText(s.slice(0, 400), 400));
    expect(oneLine(`a${" ".repeat(4 * 1024 * 1024)}\n y`)).toBe("a y");
  });
});
