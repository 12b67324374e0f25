// Property tests of what scrubbing (src/vault/scrub.ts) gives away and when it gives up: a marker
// says nothing of the value it replaced (neither its length nor its characters), and no text, of
// any UTF-16 (lone surrogates too), makes scrubbing throw, but text whose markers would grow it
// too much, which every caller shows as NOT_SCRUBBED (src/util/log.ts). fast-check looks for two
// values whose scrubbed texts differ, and for values and a text on which a scrub throws. (These
// held on the code they were written against: they keep it so.)
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NOT_SCRUBBED, scrubbedOr } from "../../src/util/log.js";
import { ReleasedValues } from "../../src/vault/scrub.js";

/** Characters of values: none of the JSON message's own (its keys, `2.0`, the id), so that only the value is replaced. */
const valueChar = fc.constantFrom(...[..."abXYZ9é😀[]%+ "]);
/** Characters around a value: none of the value's, nor of its base64, hex or percent forms. */
const aroundChar = fc.constantFrom(..."!#&*~".split(""));

const ENCODED: ((v: string) => string)[] = [
  (v) => v,
  (v) => Buffer.from(v, "utf8").toString("base64"),
  (v) => Buffer.from(v, "utf8").toString("base64url"),
  (v) => Buffer.from(v, "utf8").toString("hex"),
  (v) => encodeURIComponent(v),
  (v) => JSON.stringify(v).slice(1, -1),
  (v) => JSON.stringify(JSON.stringify(v)).slice(1, -1),
];

/** UTF-16 of any kind: lone surrogates, controls, escapes, markers. */
const anyText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({
    unit: fc.constantFrom(
      "\ud800",
      "\udc00",
      "😀",
      "\\",
      "u",
      "0",
      "d",
      "8",
      "%",
      "[",
      "]",
      "a",
      '"',
      "\n",
      "+",
    ),
    maxLength: 40,
  }),
  fc.constant("[redacted:k]"),
);

describe("a marker says nothing of the value", () => {
  it("the scrubbed text is the same whichever value (of any length) it held, in any form", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: valueChar, minLength: 1, maxLength: 300 }),
        fc.string({ unit: valueChar, minLength: 1, maxLength: 300 }),
        fc.string({ unit: aroundChar, maxLength: 5 }),
        fc.string({ unit: aroundChar, maxLength: 5 }),
        fc.nat(ENCODED.length - 1),
        (v1, v2, before, after, form) => {
          const scrubbed = (v: string) => {
            const released = new ReleasedValues();
            released.add("k", v);
            const t = before + ENCODED[form]!(v) + after;
            const line = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { t } });
            return [
              released.scrubText(t),
              released.scrubPieces(released.scrubText(t)),
              released.scrubLine(line),
            ];
          };
          expect(scrubbed(v1), JSON.stringify([v1, v2, before, after, form])).toEqual(scrubbed(v2));
        },
      ),
      { numRuns: 600 },
    );
  });
});

describe("scrubbing never throws on text of any kind", () => {
  it("scrubText, scrubPieces, scrubLine, scrubHost, scrubValue and cutter, values and texts of any UTF-16", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            anyText.filter((v) => v !== ""),
            fc.string({ maxLength: 6 }),
          ),
          { minLength: 1, maxLength: 3 },
        ),
        anyText,
        (values, t) => {
          const released = new ReleasedValues();
          for (const [v, scope] of values) released.add(scope, v);
          released.scrubText(t);
          released.scrubPieces(released.scrubText(t));
          released.scrubLine(t);
          released.scrubLine(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { [t]: t } }));
          released.scrubHost(t);
          released.scrubValue({ [t]: [t, 1] });
          released.cutter(t)(t.length >> 1);
        },
      ),
      { numRuns: 1500 },
    );
  });

  it("a text whose markers would grow it past the bound: the sentence in its place, never a throw", () => {
    const released = new ReleasedValues();
    released.add("a".repeat(128), "~");
    const scrub = (t: string) => released.scrubText(t);
    expect(scrubbedOr(scrub, "~".repeat(200_000))).toBe(NOT_SCRUBBED);
  });
});
