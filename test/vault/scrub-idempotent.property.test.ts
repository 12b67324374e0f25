// Property tests that scrubbing is idempotent (src/vault/scrub.ts) for values that hold `[` or
// `]`: a form of such a value can run into a marker (`s]x` after the marker `[redacted:s]`, the
// value `s]x`), or be formed by a marker's last characters and the text after it once an
// occurrence there is replaced (`s]xx` → `[redacted:s]x`, which holds `s]x` again). Scrubbing left
// that for the next pass, so scrubbed text changed when scrubbed again, and what one pass wrote
// still held the value across a marker's edge. fast-check looks for values (under scopes whose
// markers end in characters the values hold) and a text of them, their spellings, markers and
// bracket characters, where scrubbing twice differs from scrubbing once, or where the output holds
// an occurrence of a form that is not inside one marker.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NOT_SCRUBBED, scrubbedOr } from "../../src/util/log.js";
import { percentPattern } from "../../src/vault/percentSpelling.js";
import { ReleasedValues, redactionMarker } from "../../src/vault/scrub.js";
import { formsOf } from "../../src/vault/valueForms.js";
import { expectLinear } from "../helpers/linear.js";

const unit = fc.constantFrom(..."[]redact:sx_a%5Db".split(""));
const scope = fc.constantFrom("s", "x", "a", "credential", "sx");

/** Values (each under a scope) and the pieces of a text: a value, a spelling, a marker, or other characters. */
const case_ = fc.tuple(
  fc.array(fc.tuple(fc.string({ unit, minLength: 1, maxLength: 6 }), scope), { minLength: 1, maxLength: 2 }),
  fc.array(
    fc.oneof(
      fc.tuple(fc.constant("value" as const), fc.nat(5), fc.nat(20)),
      fc.tuple(fc.constant("marker" as const), fc.nat(5), fc.nat()),
      fc.tuple(fc.constant("text" as const), fc.string({ unit, maxLength: 4 }), fc.nat()),
    ),
    { maxLength: 8 },
  ),
);

type Piece = ["value", number, number] | ["marker", number, number] | ["text", string, number];

function textOf(values: [string, string][], pieces: Piece[]): string {
  return pieces
    .map((p) => {
      if (p[0] === "text") return p[1];
      const [v, s] = values[p[1] % values.length]!;
      if (p[0] === "marker") return redactionMarker(s);
      const forms = formsOf(v);
      return forms[p[2] % forms.length]!;
    })
    .join("");
}

/** Where each marker the scrubber writes lies in `t` (markers never overlap: scopes have no "]"). */
function markerRanges(t: string, scopes: string[]): [number, number][] {
  const out: [number, number][] = [];
  for (const m of new Set([...scopes, "credential"].map(redactionMarker)))
    for (let at = t.indexOf(m); at !== -1; at = t.indexOf(m, at + 1)) out.push([at, at + m.length]);
  return out;
}

/**
 * The occurrences in `t` of a form of `v` (every written form, and every percent spelling, at
 * every start) that are not inside one marker.
 */
function exposed(t: string, v: string, marks: [number, number][]): string[] {
  const found: [number, number][] = [];
  for (const f of new Set(formsOf(v)))
    for (let at = t.indexOf(f); at !== -1; at = t.indexOf(f, at + 1)) found.push([at, at + f.length]);
  const sticky = new RegExp(percentPattern(v).source, "y");
  for (let i = 0; i < t.length; i++) {
    sticky.lastIndex = i;
    const m = sticky.exec(t);
    if (m) found.push([i, i + m[0].length]);
  }
  return found
    .filter(([a, b]) => !marks.some(([s, e]) => s <= a && b <= e))
    .map(([a, b]) => `${JSON.stringify(t.slice(a, b))} at ${a}`);
}

/** Every string of a parsed JSON value, keys included. */
function stringsOf(v: unknown, out: string[] = []): string[] {
  if (typeof v === "string") out.push(v);
  else if (Array.isArray(v)) for (const x of v) stringsOf(x, out);
  else if (typeof v === "object" && v !== null)
    for (const [k, x] of Object.entries(v)) {
      out.push(k);
      stringsOf(x, out);
    }
  return out;
}

function releasedOf(values: [string, string][]): ReleasedValues {
  const released = new ReleasedValues();
  for (const [v, s] of values) released.add(s, v);
  return released;
}

describe("scrubbing is idempotent, for values that run into markers too", () => {
  it("scrubText: scrubbed again it is the same, and no form of a value is left outside one marker", () => {
    fc.assert(
      fc.property(case_, ([values, pieces]) => {
        const released = releasedOf(values);
        const t = textOf(values, pieces as Piece[]);
        const once = released.scrubText(t);
        const twice = released.scrubText(once);
        const scopes = values.map(([, s]) => s);
        const marks = markerRanges(once, scopes);
        for (const [v] of values)
          expect(exposed(once, v, marks), JSON.stringify([values, t, once])).toEqual([]);
        expect(twice, JSON.stringify([values, t])).toBe(once);
      }),
      {
        numRuns: 1500,
        // found by a clean-clone CI: a marker the text wrote, cut by the stretch settling searched
        // ("[redacted:credential]5b" for "[" and "][": the first marker lost its "]")
        examples: [
          [
            [
              [
                ["[", "credential"],
                ["][", "s"],
              ],
              [
                ["marker", 0, 0],
                ["value", 0, 5],
              ],
            ],
          ],
        ],
      },
    );
  });

  it("scrubLine of a JSON message: scrubbed again it is the same, and it holds no form outside one marker", () => {
    fc.assert(
      fc.property(case_, ([values, pieces]) => {
        const released = releasedOf(values);
        const t = textOf(values, pieces as Piece[]);
        // values in the message's own frame too (its key "id", "jsonrpc", JSON's syntax):
        // test/vault/scrub-line-idempotent.property.test.ts looks for those in any message
        const frame = (x: string) => JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text: x } });
        const line = frame(t);
        const once = released.scrubLine(line);
        expect(released.scrubLine(once), JSON.stringify([values, t])).toBe(once);
        // every string of it, keys too (JSON's own syntax, `:` say, is no value's to take out),
        // but its id and the key "id": the frame's, kept as written (docs/security.md)
        const { id: _id, ...members } = JSON.parse(once);
        for (const str of stringsOf(members)) {
          const marks = markerRanges(
            str,
            values.map(([, s]) => s),
          );
          for (const [v] of values) expect(exposed(str, v, marks), JSON.stringify([values, t])).toEqual([]);
        }
      }),
      { numRuns: 800 },
    );
  });

  it("the log's scrub (scrubPieces after scrubText): scrubbed again it is the same", () => {
    // values long enough to have pieces (8 characters), and their pieces in the text
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.string({ unit, minLength: 1, maxLength: 14 }), scope), {
          minLength: 1,
          maxLength: 2,
        }),
        fc.array(fc.oneof(fc.string({ unit, maxLength: 10 }), fc.constant("[redacted:s]")), { maxLength: 8 }),
        (values, parts) => {
          const released = releasedOf(values);
          const t = [...parts, ...values.map(([v]) => v), ...values.map(([v]) => v.slice(1, 10))].join("");
          const logged = (x: string) => released.scrubPieces(released.scrubText(x));
          const once = logged(t);
          expect(logged(once), JSON.stringify([values, t])).toBe(once);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("the cases fast-check found: a form formed by a marker's end and the text after it, again and again", () => {
    const released = new ReleasedValues();
    released.add("s", "s]x");
    // `s]x` replaced leaves `[redacted:s]x`, which ends in `s]x` again
    expect(released.scrubText("s]xx")).toBe("[redacted:s]");
    expect(released.scrubText("s]xxxxxxxx!")).toBe("[redacted:s]!");
    expect(released.scrubText("[redacted:s]x")).toBe("[redacted:s]");
    // a value that starts at a marker's start: text before it and a marker's first characters
    const start = new ReleasedValues();
    start.add("k", "a[r");
    expect(start.scrubText("aa[r")).toBe(start.scrubText(start.scrubText("aa[r")));
    // a piece's marker (scrubPieces) running into a form: `D[[[[[[[s` is taken as pieces, and its
    // marker's end and the `D[` after it are the value `]D[`
    const pieces = new ReleasedValues();
    pieces.add("s", "D[[[[[[[s");
    pieces.add("s", "]D[");
    const logged = pieces.scrubPieces(pieces.scrubText("D[[[[[[[s]D[[[[[[[[sD["));
    expect(pieces.scrubPieces(pieces.scrubText(logged))).toBe(logged);
  });

  it("text built to make a marker take one character a round: each round over the marker's surroundings alone, past a bound failing closed", () => {
    const released = new ReleasedValues();
    released.add("s", "s]x");
    // a round per character taken, each over the stretch around the marker: linear in the text
    expectLinear((n) => {
      const t = `s]${"x".repeat(n)}!`;
      return () => {
        expect(released.scrubText(t)).toBe("[redacted:s]!");
      };
    }, 5000);
    // with an escape in the text a form can be spelled longer, and each stretch is wider by what
    // the escapes can add (src/vault/scrub.ts, settleReach): 200,000 rounds of it are not run,
    // and the text is not shown
    const scrub = (t: string) => released.scrubText(t);
    expect(scrubbedOr(scrub, `s]${"x".repeat(200_000)}\\n`)).toBe(NOT_SCRUBBED);
  });
});
