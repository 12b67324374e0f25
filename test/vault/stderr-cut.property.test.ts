// Property tests of how a server's stderr is cut into lines and scrubbed
// (src/supervisor/stderrLines.ts): whatever the chunking (arbitrary byte boundaries, across
// multi-byte characters) and however short the cap, the pieces shown, put back together, are the
// whole lines scrubbed (every form, then every stretch of 8 characters or more of the value); so
// no released value, nor a stretch of one, is ever shown split across a cut.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CUT_MARK, StderrLines } from "../../src/supervisor/stderrLines.js";
import { ReleasedValues } from "../../src/vault/scrub.js";
import { formsOf } from "../../src/vault/valueForms.js";

const MARK = "[redacted:api]";

const unit = fc.constantFrom(
  ..."abcXYZ019".split(""),
  ..."\\^$.*+?()[]{}|/-=%&\"' ".split(""),
  "é",
  "中",
  "😀",
);
const value = fc.string({ unit, minLength: 1, maxLength: 30 });

/** `v` with the characters `choices` picks (in turn) spelled as JSON's \uXXXX escapes. */
function spelled(v: string, choices: boolean[]): string {
  const escaped = (c: string) =>
    c
      .split("")
      .map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`)
      .join("");
  // a surrogate pair stays whole: both halves escaped, or neither
  return [...v].map((c, i) => (choices[i % choices.length] ? escaped(c) : c)).join("");
}

/** A stderr stream holding the value in some of its forms, its bytes cut at arbitrary places, a cap. */
const scenario = value.chain((v) =>
  fc
    .record({
      parts: fc.array(
        fc.oneof(
          fc.constantFrom(...formsOf(v)),
          // spelled with escapes, as a JSON writer of its own may (src/vault/jsonSpelling.ts)
          fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }).map((choices) => spelled(v, choices)),
          // cut short, as a server logs a key's start or an error quotes part of it (whole
          // characters: what a UTF-8 stream carries)
          fc.tuple(fc.nat(), fc.nat()).map(([a, b]) => {
            const chars = [...v];
            const from = a % chars.length;
            return chars.slice(from, from + (b % chars.length) + 1).join("");
          }),
          fc.string({ unit: fc.oneof(unit, fc.constant("\n")), maxLength: 40 }),
        ),
        { maxLength: 12 },
      ),
      cuts: fc.array(fc.nat(), { maxLength: 12 }),
      maxLine: fc.integer({ min: 2, max: 48 }),
    })
    .map(({ parts, cuts, maxLine }) => ({ v, input: parts.join(""), cuts, maxLine })),
);

/** The bytes of `text` in chunks cut at the given offsets (modulo its length). */
function chunked(text: string, cuts: number[]): Buffer[] {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length === 0) return [];
  const at = [...new Set(cuts.map((c) => c % bytes.length))].filter((c) => c > 0).sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const c of [...at, bytes.length]) {
    out.push(bytes.subarray(from, c));
    from = c;
  }
  return out;
}

/** What the lines shown say once the cut pieces are joined again (each line ends with "\n"). */
function rejoined(shown: string[]): string {
  return shown.map((l) => (l.endsWith(CUT_MARK) ? l.slice(0, -CUT_MARK.length) : `${l}\n`)).join("");
}

function run(chunks: Buffer[], released: ReleasedValues | null, maxLine: number): string[] {
  const shown: string[] = [];
  const lines = new StderrLines((l) => shown.push(l), released, maxLine);
  for (const c of chunks) lines.push(c);
  lines.end();
  return shown;
}

describe("stderr lines: cut and scrubbed", () => {
  it("the pieces are the whole lines scrubbed, whatever the chunking and the cap", () => {
    fc.assert(
      fc.property(scenario, ({ v, input, cuts, maxLine }) => {
        const released = new ReleasedValues();
        released.add("api", v);
        const shown = run(chunked(input, cuts), released, maxLine);
        const lines = input.split("\n");
        if (lines.at(-1) === "") lines.pop();
        expect(rejoined(shown)).toBe(
          lines.map((l) => `${released.scrubPieces(released.scrubText(l))}\n`).join(""),
        );
        // so no line, its cut pieces put side by side, shows the value where scrubbing it whole would not
        const whole = rejoined(shown).split("\n");
        lines.forEach((l, i) => {
          if (
            released
              .scrubText(l)
              .split(MARK)
              .some((p) => p.includes(v))
          )
            return;
          for (const outside of whole[i]!.split(MARK)) expect(outside).not.toContain(v);
        });
      }),
      { numRuns: 400 },
    );
  });

  it("a stretch of the value where a long line is cut: the cut moves past it, never shown in parts", () => {
    const long = fc
      .string({ unit, minLength: 8, maxLength: 30 })
      .filter((v) => [...v].length >= 8)
      .chain((v) =>
        fc.record({
          v: fc.constant(v),
          from: fc.nat(),
          length: fc.integer({ min: 8, max: 30 }),
          before: fc.nat(60),
          cuts: fc.array(fc.nat(), { maxLength: 12 }),
          maxLine: fc.integer({ min: 2, max: 48 }),
        }),
      );
    fc.assert(
      fc.property(long, ({ v, from, length, before, cuts, maxLine }) => {
        const released = new ReleasedValues();
        released.add("api", v);
        const chars = [...v];
        const start = from % chars.length;
        const piece = chars.slice(start, start + length).join("");
        // long enough to be cut, with the stretch where the first cut falls
        const line = `${"x".repeat(before)}${piece}${"y".repeat(released.longestForm() + 100)}`;
        const shown = run(chunked(`${line}\n`, cuts), released, maxLine);
        expect(shown.length).toBeGreaterThan(1);
        expect(rejoined(shown)).toBe(`${released.scrubPieces(released.scrubText(line))}\n`);
      }),
      { numRuns: 300 },
    );
  });

  it("without released values, lines come out as written, cut at the cap, characters whole", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.oneof(unit, fc.constant("\n")), maxLength: 200 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        fc.integer({ min: 2, max: 16 }),
        (input, cuts, maxLine) => {
          const shown = run(chunked(input, cuts), null, maxLine);
          const lines = input.split("\n");
          if (lines.at(-1) === "") lines.pop();
          expect(rejoined(shown)).toBe(lines.map((l) => `${l}\n`).join(""));
          for (const l of shown) expect(l.replace(CUT_MARK, "").length).toBeLessThanOrEqual(maxLine);
          expect(shown.join("")).not.toContain("\uFFFD");
        },
      ),
      { numRuns: 300 },
    );
  });

  it("C0 and C1 controls but tab are shown as \\u00XX escapes, before scrubbing", () => {
    const released = new ReleasedValues();
    released.add("api", "S3cr3tV4lue-zq9XwK7p");
    const shown = run(
      [Buffer.from("a\tb\x1b[31mred\rback\x07\x7f\u009b2J S3cr3\x1b[0mtV4lue-zq9XwK7p\n")],
      released,
      1000,
    );
    // an escaped control spells that control, not the value: the value is cut in two, and its
    // second part, 8 characters or more of it, is taken out as a piece
    expect(shown).toEqual([`a\tb\\u001b[31mred\\u000dback\\u0007\\u007f\\u009b2J S3cr3\\u001b[0m${MARK}`]);
    expect(run([Buffer.from("S3cr3tV4lue-zq9XwK7p\r\n")], released, 1000)).toEqual([`${MARK}\\u000d`]);
  });
});
