// Property test that scrubLine (src/vault/scrub.ts) is idempotent for any JSON-RPC message, when
// a released value is also part of the message's own frame: a key ("id", "result", "text"), a
// member's number, or JSON's syntax (`["`, `":`, `}`), which a short value can collide with. Such a
// message is written again from its parsed form (its text in place would no longer parse, or would
// route elsewhere), and that rewrite must itself be a message the scrubber leaves as it is: a line
// the gateway logs is scrubbed again as text, and a message relayed is quoted in log lines, so
// scrubbed output scrubbed again must not change. fast-check looks for values (made of frame
// characters) and messages (keys, strings and numbers holding them) where scrubbing twice differs
// from scrubbing once.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReleasedValues } from "../../src/vault/scrub.js";

const unit = fc.constantFrom(...'{}[]":,.0123 -idtexsulrjonpc\\u]'.split(""));
const values = fc.array(
  fc.tuple(fc.string({ unit, minLength: 1, maxLength: 5 }), fc.constantFrom("s", "id", "t")),
  {
    minLength: 1,
    maxLength: 2,
  },
);

/** A string: a value, a word of the frame, or a few frame characters. */
const word = (vs: string[]) =>
  fc.oneof(
    fc.constantFrom(...vs),
    fc.constantFrom("id", "result", "text", "jsonrpc", "error", "2.0", "content"),
    fc.string({ unit, maxLength: 4 }),
  );

/** A JSON value made of such strings, as keys and as strings, and of small numbers. */
const jsonOf = (vs: string[]) =>
  fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      word(vs),
      fc.integer({ min: -5, max: 2000 }),
      fc.constant(null),
      fc.array(tie("node"), { maxLength: 3 }),
      fc.dictionary(word(vs), tie("node"), { maxKeys: 3 }),
    ),
  })).node;

const case_ = values.chain((vs) => {
  const texts = vs.map(([v]) => v);
  const message = fc.record({
    jsonrpc: fc.constant("2.0"),
    id: fc.oneof(fc.integer({ min: 0, max: 2000 }), word(texts)),
    result: jsonOf(texts),
  });
  return fc.record({
    values: fc.constant(vs),
    line: fc.oneof(
      message.map((m) => JSON.stringify(m)),
      // members in another order, and a batch
      message.map(({ id, result, jsonrpc }) => JSON.stringify({ result, id, jsonrpc })),
      fc.array(message, { minLength: 1, maxLength: 2 }).map((ms) => JSON.stringify(ms)),
    ),
  });
});

describe("scrubLine is idempotent, for values in the message's own frame too", () => {
  it("scrubbed again, a scrubbed message is the same", () => {
    fc.assert(
      fc.property(case_, ({ values, line }) => {
        const released = new ReleasedValues();
        for (const [v, s] of values) released.add(s, v);
        const once = released.scrubLine(line);
        expect(released.scrubLine(once), JSON.stringify({ values, line, once })).toBe(once);
      }),
      {
        numRuns: 1500,
        // found against the build before: the key "id" holding the value "d", replaced in place
        // and kept as a member when the message was written again (the next scrubbing moved
        // it); a batch element whose id was put after its other members; the id 1640 holding
        // "64", the hex of "d", with the key "id" replaced in the same line
        examples: [
          [{ values: [["d", "s"]], line: '{"result":"d","id":0,"jsonrpc":"2.0"}' }],
          [
            {
              values: [["{", "s"]],
              line: '[{"jsonrpc":"2.0","id":"{","result":""},{"jsonrpc":"2.0","id":0,"result":""}]',
            },
          ],
          [{ values: [["d", "s"]], line: '{"result":"d","id":1640,"jsonrpc":"2.0"}' }],
        ],
      },
    );
  });
});
