import { describe, expect, it } from "vitest";
import { callFields, requestIdFields } from "../../src/gateway/records.js";

/** What requestIdFields gave before its short path for plain integers: the JSON round trip. */
function roundTrip(idText: string): { requestId: unknown; requestIdText?: string } {
  const requestId: unknown = JSON.parse(idText);
  return JSON.stringify(requestId) === idText ? { requestId } : { requestId, requestIdText: idText };
}

/** `f`'s fields for `idText`, or that it threw (a text that is no JSON: `01`, `00`). */
function outcome(f: (idText: string) => unknown, idText: string): unknown {
  try {
    return f(idText);
  } catch {
    return "threw";
  }
}

describe("requestIdFields", () => {
  // the texts a short path for integers could get wrong: signs, zeros, lengths around 15 digits
  const edges = [
    "-",
    "",
    "0",
    "-0",
    "00",
    "01",
    "-01",
    "7",
    "-7",
    "10",
    "3039",
    "-3039",
    "999999999999999",
    "-999999999999999",
    "1000000000000000",
    "9007199254740991",
    "9007199254740993",
    "-9007199254740993",
    "12345678901234567890",
    "1.0",
    "1e2",
    "1E2",
    "-1.5",
    '"7"',
    '"a\\/b"',
    '""',
    "null",
  ];
  it.each(edges)("gives %s the fields of its JSON round trip", (idText) => {
    expect(outcome(requestIdFields, idText)).toStrictEqual(outcome(roundTrip, idText));
  });

  it("gives every integer text of 1 to 17 digits, either sign, the fields of its JSON round trip", () => {
    let seed = 7;
    const digit = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return String(seed % 10);
    };
    for (let len = 1; len <= 17; len++)
      for (let k = 0; k < 200; k++) {
        let text = "";
        for (let d = 0; d < len; d++) text += digit();
        for (const idText of [text, `-${text}`])
          expect(outcome(requestIdFields, idText)).toStrictEqual(outcome(roundTrip, idText));
      }
  });

  it("keeps the key order of a call's name fields: the id's, then the call key", () => {
    expect(Object.keys(callFields({ idText: "12", key: 3 }))).toEqual(["requestId", "callKey"]);
    expect(Object.keys(callFields({ idText: "1.0", key: 3 }))).toEqual([
      "requestId",
      "requestIdText",
      "callKey",
    ]);
    expect(callFields({ idText: '"x"' })).toStrictEqual({ requestId: "x" });
  });
});
