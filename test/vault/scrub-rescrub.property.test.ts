// Property tests of scrubbing text already scrubbed (src/vault/scrub.ts): every log line is
// scrubbed more than once (as the message, as the line quoting it, by the logger), and a marker
// holds letters a value may be made of (a value "a" is in every marker): scrubbing inside markers
// made a marker of markers at each pass, a line many times longer, past V8's longest string.
// fast-check looks for values and a text (holding them, their markers and other text) whose
// scrubbing, done again, changes it (or, for a value with a bracket, grows it).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReleasedValues, redactionMarker } from "../../src/vault/scrub.js";
import { expectLinear } from "../helpers/linear.js";

/** Characters of markers, and others: values made of them are found inside every marker. */
const markerish = fc.constantFrom(..."redact:_ax%7b+ ".split(""));
const brackets = fc.constantFrom(..."[]redact:_ax%7b+ ".split(""));

/** Values (each under a scope) and a text that holds them, their markers and other text. */
function scrubbedTwice(unit: fc.Arbitrary<string>, scope: fc.Arbitrary<string>) {
  return fc.tuple(
    fc.array(fc.tuple(fc.string({ unit, minLength: 1, maxLength: 10 }), scope), {
      minLength: 1,
      maxLength: 3,
    }),
    fc.array(fc.oneof(fc.string({ unit: brackets, maxLength: 12 }), fc.constant("[redacted:credential]")), {
      maxLength: 8,
    }),
  );
}

function textFor(values: [string, string][], parts: string[]): string {
  return [...parts, ...values.flatMap(([v, s]) => [v, redactionMarker(s)])].join(parts[0] ?? "");
}

describe("text already scrubbed is scrubbed no further", () => {
  it("scrubbing it again leaves it as it is: scrubText, and scrubPieces after it (the log's scrub)", () => {
    fc.assert(
      fc.property(scrubbedTwice(markerish, fc.stringMatching(/^[a-z_]{1,20}$/)), ([values, parts]) => {
        const released = new ReleasedValues();
        for (const [v, scope] of values) released.add(scope, v);
        const t = textFor(values, parts);
        const once = released.scrubText(t);
        expect(released.scrubText(once), JSON.stringify(t)).toBe(once);
        const logged = released.scrubPieces(once);
        expect(released.scrubPieces(released.scrubText(logged))).toBe(logged);
      }),
      { numRuns: 400 },
    );
  });

  it("a value with a bracket (a form can then run into a marker's end or start): scrubbed again, it only ever shrinks", () => {
    // `s]x` after `[redacted:s]` is taken with the marker, as one marker: never a marker inside a
    // marker (that it comes out the same: scrub-idempotent.property.test.ts)
    fc.assert(
      fc.property(scrubbedTwice(brackets, fc.constant("s")), ([values, parts]) => {
        const released = new ReleasedValues();
        for (const [v, scope] of values) released.add(scope, v);
        let last = released.scrubText(textFor(values, parts));
        for (let i = 0; i < 3; i++) {
          const again = released.scrubPieces(released.scrubText(last));
          expect(again.length).toBeLessThanOrEqual(last.length);
          last = again;
        }
      }),
      { numRuns: 400 },
    );
  });

  it("a one-character value under a 128-character name: scrubbed three times as a log line is, no longer than once", () => {
    const released = new ReleasedValues();
    const name = "a".repeat(128);
    released.add(name, "a");
    const once = released.scrubText("a b a");
    expect(once).toBe(`${redactionMarker(name)} b ${redactionMarker(name)}`);
    let again = once;
    for (let i = 0; i < 3; i++) again = released.scrubPieces(released.scrubText(again));
    expect(again).toBe(once);
    // a server's message too: the line the gateway relays, then quotes in its log
    const line = released.scrubLine(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text: "a" } }));
    expect(released.scrubText(line)).toBe(line);
  });

  it('text of many marker starts before one "]" (a hostile server\'s): the markers in it are found in linear time', () => {
    const released = new ReleasedValues();
    released.add("s", "~");
    expectLinear((n) => {
      const t = `~${"[redacted:".repeat(n)}]`;
      return () => {
        expect(released.scrubText(t)).toBe(`[redacted:s]${"[redacted:".repeat(n)}]`);
      };
    }, 8000);
  });
});
