import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { exactReadNumbers, writtenAgain } from "../../src/gateway/asWritten.js";
import { memberWrittenTwice, respelledNumbers } from "../../src/util/writtenIntegers.js";

/**
 * writtenAgain: a message the gateway rewrote (a handshake answer), serialised with each number
 * re-serialising would change written as the server wrote it. Against its definition: the text it
 * writes parses to the same value as what it was given, and holds the same respelled numbers, at
 * the same places, with the same exact values, as the server's text; the gateway's own change
 * (members added or taken out) is the only difference.
 */
const leaf = fc.oneof(
  fc.tuple(fc.boolean(), fc.stringMatching(/^[1-9][0-9]{0,24}$/)).map(([neg, d]) => `${neg ? "-" : ""}${d}`),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.stringMatching(/^[0-9a-z]{0,30}$/).map((s) => JSON.stringify(s)),
  fc.constantFrom(
    "true",
    "null",
    "-0",
    "1e-400",
    "12345678901234567890e0",
    "12345678901234.567",
    "9007199254740993.0",
    "0.12345678901234567891",
  ),
);
const json: fc.Arbitrary<string> = fc.letrec((tie) => ({
  value: fc.oneof(
    { maxDepth: 3 },
    leaf,
    fc.array(tie("value") as fc.Arbitrary<string>, { maxLength: 4 }).map((a) => `[${a.join(", ")}]`),
    fc
      .array(fc.tuple(fc.stringMatching(/^[a-z0-9]{1,6}$/), tie("value") as fc.Arbitrary<string>), {
        maxLength: 4,
      })
      .map((m) => `{${m.map(([k, v]) => `${JSON.stringify(k)} : ${v}`).join(",")}}`),
  ),
})).value as fc.Arbitrary<string>;

function numbersOf(text: string): string[] {
  return respelledNumbers(text)
    .map((n) => `${JSON.stringify(n.path)}=${n.exact}`)
    .sort();
}

describe("writtenAgain", () => {
  it("writes what was read, every respelled number as written at its place", () => {
    fc.assert(
      fc.property(json, (inner) => {
        const text = `{"jsonrpc":"2.0","id":7,"result":${inner}}`;
        if (memberWrittenTwice(text)) return;
        const value = JSON.parse(text) as unknown;
        const out = writtenAgain(value, text);
        // (what JSON.stringify writes of it: -0 is 0, as the gateway writes it)
        expect(JSON.stringify(JSON.parse(out))).toBe(JSON.stringify(value));
        expect(numbersOf(out)).toEqual(numbersOf(text));
      }),
      { numRuns: 400 },
    );
  });

  it("a rewrite that adds and takes out members keeps the numbers it left where they were", () => {
    const text =
      '{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"tools":{},"tasks":{"n":9007199254740993},"1":[12345678901234567891]},"serverInfo":{"build":1e-400}}}';
    const read = JSON.parse(text) as { result: { capabilities: Record<string, unknown> } };
    const { tasks: _tasks, ...kept } = read.result.capabilities;
    const rewritten = {
      ...read,
      result: { ...read.result, capabilities: { ...kept, tools: { listChanged: true } } },
    };
    const out = writtenAgain(rewritten, text);
    expect(out).toContain('"1":[12345678901234567891]');
    expect(out).toContain('"build":1e-400');
    expect(out).not.toContain("9007199254740993");
    expect(JSON.parse(out)).toEqual(rewritten);
  });
});

describe("exactReadNumbers", () => {
  it("lists the respelled numbers of protocolVersion and capabilities only, by place and exact value", () => {
    const text =
      '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"x":{"n":9007199254740993.0}},"serverInfo":{"build":9007199254740993}}}';
    expect(exactReadNumbers(text)).toEqual(['["capabilities","x","n"]=9007199254740993e0']);
    expect(exactReadNumbers(text.replace("9007199254740993.0", "9007199254740993"))).toEqual(
      exactReadNumbers(text),
    );
    expect(exactReadNumbers(text.replace("9007199254740993.0", "9007199254740992"))).toEqual([]);
    expect(exactReadNumbers(undefined)).toEqual([]);
  });
});
