// Where a respelled integer lies (what the refusal names: `Field "b" holds the integer …`) is
// where the client wrote it, also when another number of the same arguments is the double it
// reads as: `{"a": 9007199254740992, "b": 9007199254740993}` holds the respelled integer at "b";
// "a" is exact and goes out as written. Before, the first number of the parsed value equal to the
// double read was named, and the refusal sent the client to a field that was fine.
import { describe, expect, it } from "vitest";
import { respelledIntegerIn, respelledIntegerLeftIn } from "../../src/util/writtenIntegers.js";

const cases: [string, (string | number)[]][] = [
  ['{"a": 9007199254740992, "b": 9007199254740993}', ["b"]],
  ['{"list": [9007199254740992, 9007199254740993]}', ["list", 1]],
  [
    '{"x": {"k": 9007199254740992}, "y": [{"k": "9007199254740993"}, {"k": 9007199254740993}]}',
    ["y", 1, "k"],
  ],
  ['{"a": 1, "\\u0062": -9007199254740993}', ["b"]],
];

describe("the path of a respelled integer", () => {
  for (const [text, path] of cases)
    it(`${text} names ${JSON.stringify(path)}`, () => {
      expect(respelledIntegerIn(text, JSON.parse(text))?.path).toEqual(path);
      expect(respelledIntegerLeftIn(text, JSON.parse(text))?.path).toEqual(path);
    });

  it("a rewrite that moved the integer elsewhere still finds it (where it is now)", () => {
    const text = '{"code": 1, "data": 9007199254740993}';
    const moved = { wrapped: { server: JSON.parse(text) } };
    expect(respelledIntegerLeftIn(text, moved)?.path).toEqual(["wrapped", "server", "data"]);
  });

  it("a rewrite that took the integer out finds none", () => {
    const text = '{"requestId": 9007199254740993, "n": 1}';
    expect(respelledIntegerLeftIn(text, { requestId: 7, n: 1 })).toBeNull();
  });
});
