// memberWrittenTwice decides whether a server message holding a long integer may go on as written
// (src/gateway/serverMessages.ts): a member written twice anywhere could be read otherwise by the
// client than by the gateway. Keys compare as JSON.parse reads them.
import { describe, expect, it } from "vitest";
import { memberWrittenTwice } from "../../src/util/writtenIntegers.js";

describe("memberWrittenTwice", () => {
  it.each([
    ['{"a":1,"a":2}', true],
    ['{"a":1,"\\u0061":2}', true],
    ['{"r":{"isError":false,"c":[{"x":1}],"isError":true}}', true],
    ['[{"a":1},{"a":2}]', false],
    ['{"a":{"a":1},"b":{"a":2}}', false],
    ['{"a":"\\"a\\":","b":["a","a"]}', false],
    ['{"a" : 1, "b" :{"c":1} ,\n "a" : 3}', true],
    ['{"x":"a","y":"a"}', false],
    ['{"\\\\":1,"\\\\":2}', true],
    ['{"a\\\\":1,"a":2}', false],
  ])("%s: %s", (text, twice) => {
    JSON.parse(text); // valid JSON, as every message it is given
    expect(memberWrittenTwice(text)).toBe(twice);
  });

  it("agrees with a recursive check over deep nesting", () => {
    const deep = `${'{"a":['.repeat(3000)}1${"]}".repeat(3000)}`;
    expect(memberWrittenTwice(deep)).toBe(false);
    expect(memberWrittenTwice(`${'{"a":['.repeat(3000)}{"b":1,"b":2}${"]}".repeat(3000)}`)).toBe(true);
  });
});
