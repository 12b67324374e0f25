// Property test that a released value is caught inside three levels of JSON strings in a server's
// message (src/vault/scrub.ts, listedForms): a tool result whose text is JSON with a field of JSON
// text holding the value (an API's answer carrying a JSON document as a string), each level
// written by JSON.stringify. A value with a character JSON.stringify escapes (`"`, `\`, a control)
// is written otherwise at each level, its backslashes doubled, and the forms searched went to two
// levels only: such a message went to the client with the value readable after two JSON.parse.
// fast-check looks for a value and text around it where the scrubbed message still holds the
// value at some level, or no longer parses.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReleasedValues } from "../../src/vault/scrub.js";
import { valueWithEscaped } from "./jsonLevelsKit.js";

const plain = fc.constantFrom(..."abcXYZ019-_ é/<".split(""));
const value = valueWithEscaped(plain);
const around = fc.string({ unit: plain, maxLength: 8 });

const stringified = (s: string) => JSON.stringify(s).slice(1, -1);

describe("a value inside three levels of JSON strings", () => {
  it("scrubLine leaves it at no level, and the message parses", () => {
    fc.assert(
      fc.property(value, around, around, (v, before, after) => {
        const released = new ReleasedValues();
        released.add("s", v);
        const inner = JSON.stringify({ token: `${before}${v}${after}` });
        const text = JSON.stringify({ status: 200, body: inner });
        const line = JSON.stringify({ jsonrpc: "2.0", id: 7, result: { content: [{ type: "text", text }] } });
        const out = released.scrubLine(line);
        const parsed = JSON.parse(out);
        expect(parsed.id).toBe(7);
        let level = v;
        for (let k = 0; k < 4; k++) {
          expect(out.includes(level), JSON.stringify({ v, k, out })).toBe(false);
          level = stringified(level);
        }
      }),
      {
        numRuns: 500,
        // failed before three levels were searched: `"` between letters
        examples: [['ab"c', "", ""]],
      },
    );
  });
});
