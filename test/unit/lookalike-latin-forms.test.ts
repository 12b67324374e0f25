// Letters drawn as Latin ones that are not of another script: the IPA `ɡ` (U+0261), the small
// capital `ᴅ`, the Kelvin sign `K`, the script `ℓ`, the Roman numeral `ⅼ`. Mixed with ASCII letters
// in an argument's value (`ɡithub.com`, `ⅼs -la`) they read as the text they imitate, and the review
// flagged the Cyrillic `і` but not these (Unicode gives most of them the Latin or Common script).
// What must hold: each is flagged, written as an escape; a language's own letters (Turkish `ı`,
// Azerbaijani `ə`, accented Latin) and `™` are not.
import { describe, expect, it } from "vitest";
import { mixedScriptNote, mixedScriptText } from "../../src/catalog/text.js";

describe("mixedScriptText: Latin-looking symbols and phonetic letters", () => {
  it.each([
    ["\u0261ithub.com/acme", "\\u{261}ithub.com/acme"],
    ["\u212Aey", "\\u{212a}ey"],
    ["\u1D05ocs/report", "\\u{1d05}ocs/report"],
    ["paypa\u2113.me", "paypa\\u{2113}.me"],
    ["\u217Cs -la /tmp", "\\u{217c}s -la /tmp"],
    ["g\u0251p.example", "g\\u{251}p.example"],
  ])("flags %j", (value, escaped) => {
    expect(mixedScriptText(value)).toBe(escaped);
  });

  it.each(["kap\u0131 a\u00e7\u0131k", "Az\u0259rbaycan", "caf\u00e9 cr\u00e8me", "ACME\u2122 Widget"])(
    "leaves %j alone",
    (value) => {
      expect(mixedScriptText(value)).toBeNull();
    },
  );
});

describe("mixedScriptText: a value with more strings than are looked at", () => {
  // the stack is read from the end: a mixed string first among 5,000 others was never reached
  const padded = ["https://g\u0456thub.com/acme/app", ...Array.from({ length: 5000 }, (_, i) => `item ${i}`)];

  it("is flagged as not looked at whole, never passed as free of look-alikes", () => {
    const found = mixedScriptText(padded);
    expect(found).not.toBeNull();
    expect(mixedScriptNote(found!)).toMatch(
      /more than 4096 strings, and only 4096 were looked at|g\\u\{456\}thub\.com/,
    );
  });

  it("a value of fewer strings, none mixed, is not", () => {
    expect(mixedScriptText(Array.from({ length: 4096 }, (_, i) => `item ${i}`))).toBeNull();
  });
});
