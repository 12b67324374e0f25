// An upstream that answers with echoes end to end (it repeats what it is sent, many times): the
// echo check must read such an answer a bounded number of times, not once per echo it replaces.
// Before session forty-nine, each spelling was asked afresh at each place the check had reached,
// and a spelling absent from the answer was looked for to its end each time: 16,000 echoes in
// 528 KB held the gateway's event loop 2.4 to 3.8 s, a hostile upstream's lever on every call.
// Counted here as the bytes each spelling's answer spans (from where it is asked to the end of the
// occurrence it gives, or to the end of the buffer when it gives none: what a search reads), and
// the bytes the escaped-base64 reading reads (EscapedBase64.bytesRead: before session fifty, a
// window of its own at each ask, about three per echo), not timed: the count is the work's
// shape, whatever the machine's load.
import { describe, expect, it } from "vitest";
import { type Spelling, spellingsOf, withoutValues } from "../../src/vault/egress/echo.js";
import { EscapedBase64 } from "../../src/vault/egress/escapedBase64.js";

const SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1cQz7w9XvB2mN4";

/** The spellings, each wrapped to count the bytes its answers span, and what the escaped-base64 reading read. */
function counted(): { spellings: Spelling[]; looked: () => number; read: () => number } {
  let looked = 0;
  const span = (buf: Buffer, from: number, m: ReturnType<Spelling["first"]>) => {
    looked += (m === null ? buf.length : m.end) - from;
    return m;
  };
  const made = spellingsOf([["api", SECRET]]);
  const escaped = made.filter((s) => s instanceof EscapedBase64);
  expect(escaped).toHaveLength(1);
  const spellings = made.map((s): Spelling => {
    const wrapped = Object.create(s) as Spelling;
    (wrapped as { first: Spelling["first"] }).first = (buf, from, before) =>
      span(buf, from, s.first(buf, from, before));
    if (s.pass !== undefined) {
      const pass = s.pass.bind(s);
      (wrapped as { pass: Spelling["pass"] }).pass = (buf, before) => {
        const ask = pass(buf, before);
        return (from) => span(buf, from, ask(from));
      };
    }
    return wrapped;
  });
  return { spellings, looked: () => looked + escaped[0]!.bytesRead, read: () => escaped[0]!.bytesRead };
}

/** The value's base64 with every third character URL-escaped (`%4E`), as an upstream may hide an echo. */
const ESCAPED_B64 = [...Buffer.from(SECRET).toString("base64")]
  .map((c, i) => (i % 3 === 0 ? `%${c.charCodeAt(0).toString(16).toUpperCase()}` : c))
  .join("");

describe("an answer of echoes end to end", () => {
  for (const [name, unit] of [
    ["the value as itself", SECRET],
    ["its base64", Buffer.from(SECRET).toString("base64")],
    ["its base64 with a third of its characters URL-escaped", ESCAPED_B64],
  ] as const) {
    it(`${name}, 4,000 times: every echo replaced, the answer looked through a bounded number of times`, () => {
      const body = Buffer.from(`x ${unit} y `.repeat(4000), "latin1");
      const { spellings, looked, read } = counted();
      const out = withoutValues(body, spellings).toString("latin1");
      expect(out).not.toContain(unit);
      expect(out).not.toContain(Buffer.from(SECRET).toString("base64"));
      expect(out.split(" y ").length - 1).toBe(4000);
      // each spelling reads on from its last occurrence, not from each echo to the end: a few
      // times the body per spelling at most (once per echo would be about 2,000 bodies each)
      expect(looked()).toBeLessThan(4 * spellings.length * body.length);
      // and the escaped-base64 reading reads each byte once in the pass (a window of its own at
      // each ask read 56 bodies of this answer, 5.5 KB per echo)
      expect(read()).toBeLessThanOrEqual(body.length);
    });
  }
});
