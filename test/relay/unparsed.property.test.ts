// A server line that is not JSON but names a waiting call's id (src/relay/jsonrpc.ts,
// unparsedIdOf): fast-check corrupts valid responses the ways servers do (NaN and Infinity, as
// Python's json.dumps writes them; a raw control character inside a string) and checks that the
// id is always recovered, as a response, so that its caller is always answered; and that a line
// that claims to be nothing but an id is never taken for an answer.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Id, parseLine, unparsedIdOf } from "../../src/relay/jsonrpc.js";

const id = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** What no JSON parser accepts inside a result: non-finite numbers, raw control characters in a string. */
const corruption = fc.oneof(
  fc.constantFrom("NaN", "Infinity", "-Infinity"),
  fc
    .integer({ min: 0, max: 0x1f })
    .filter((c) => c !== 0x0a) // a newline ends the line: framing, not this
    .map((c) => `"a${String.fromCharCode(c)}b"`),
);

/** A response to `id` with `bad` at some place in its result, its members in either order. */
function corruptedResponse(
  value: Id,
  before: unknown,
  bad: string,
  after: unknown,
  idFirst: boolean,
): string {
  const result = `{"content":${JSON.stringify(before)},"bad":[${bad}],"more":${JSON.stringify(after)}}`;
  const idText = JSON.stringify(value);
  return idFirst
    ? `{"jsonrpc":"2.0","id":${idText},"result":${result}}`
    : `{"result":${result},"jsonrpc":"2.0","id":${idText}}`;
}

describe("unparsedIdOf", () => {
  it("recovers the id of any response corrupted inside its result, as a response", () => {
    fc.assert(
      fc.property(
        id,
        fc.jsonValue({ maxDepth: 3 }),
        corruption,
        fc.jsonValue({ maxDepth: 3 }),
        fc.boolean(),
        (value, before, bad, after, idFirst) => {
          const line = corruptedResponse(value, before, bad, after, idFirst);
          const c = parseLine(line);
          expect(c).toMatchObject({ kind: "invalid", unparsed: true });
          const named = unparsedIdOf(line);
          expect(named?.meant).toBe("response");
          expect(named?.id).toBe(JSON.parse(JSON.stringify(value)));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("reads a request as a request, and an object that only has an id as nothing", () => {
    expect(unparsedIdOf('{"jsonrpc":"2.0","id":"r","method":"x","params":{"n":NaN}}')).toMatchObject({
      id: "r",
      meant: "request",
    });
    expect(unparsedIdOf('{"id":3,"note":NaN}')).toBeNull();
    // an id inside the corrupted part is not the message's id
    expect(unparsedIdOf('{"jsonrpc":"2.0","result":{"id":3,"x":NaN}}')).toBeNull();
    expect(unparsedIdOf("Restarting 'server.js'")).toBeNull();
  });
});
