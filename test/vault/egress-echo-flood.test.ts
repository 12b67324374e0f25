// An upstream that answers with echoes end to end (it repeats what it is sent, many times): the
// echo check must read such an answer a bounded number of times, not once per echo it replaces.
// Before session forty-nine, each spelling was asked afresh at each place the check had reached,
// and a spelling absent from the answer was looked for to its end each time: 16,000 echoes in
// 528 KB held the gateway's event loop 2.4 to 3.8 s, a hostile upstream's lever on every call.
// Counted here as the bytes each spelling's answer spans (from where it is asked to the end of the
// occurrence it gives, or to the end of the buffer when it gives none: what a search reads), not
// timed: the count is the work's shape, whatever the machine's load.
import { describe, expect, it } from "vitest";
import { type Spelling, spellingsOf, withoutValues } from "../../src/vault/egress/echo.js";

const SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1cQz7w9XvB2mN4";

/** The spellings, each wrapped to count the bytes its answers span. */
function counted(): { spellings: Spelling[]; looked: () => number } {
  let looked = 0;
  const spellings = spellingsOf([["api", SECRET]]).map((s): Spelling => {
    const wrapped = Object.create(s) as Spelling;
    (wrapped as { first: Spelling["first"] }).first = (buf, from, before) => {
      const m = s.first(buf, from, before);
      looked += (m === null ? buf.length : m.end) - from;
      return m;
    };
    return wrapped;
  });
  return { spellings, looked: () => looked };
}

describe("an answer of echoes end to end", () => {
  for (const [name, unit] of [
    ["the value as itself", SECRET],
    ["its base64", Buffer.from(SECRET).toString("base64")],
  ] as const) {
    it(`${name}, 4,000 times: every echo replaced, the answer looked through a bounded number of times`, () => {
      const body = Buffer.from(`x ${unit} y `.repeat(4000), "latin1");
      const { spellings, looked } = counted();
      const out = withoutValues(body, spellings).toString("latin1");
      expect(out).not.toContain(unit);
      expect(out.split(" y ").length - 1).toBe(4000);
      // each spelling reads on from its last occurrence, not from each echo to the end: a few
      // times the body per spelling at most (once per echo would be about 2,000 bodies each)
      expect(looked()).toBeLessThan(4 * spellings.length * body.length);
    });
  }
});
