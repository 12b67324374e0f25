// What cutting a server's stderr costs (src/supervisor/stderrLines.ts), counted and not timed: a
// cut must keep back the longest form of a released value (longestForm), which for a long value
// is millions of characters, and the text held was searched again at every cut of the cap's
// length: a few megabytes without a newline held the gateway's event loop for tens of seconds.
// The characters handed to the scrubber's search are counted through a scrubber that passes
// every call on to a real ReleasedValues: a bounded multiple of what the server wrote, and the
// value written across the cuts is still scrubbed.
import { describe, expect, it } from "vitest";
import { CUT_MARK, type LineScrubber, StderrLines } from "../../src/supervisor/stderrLines.js";
import { ReleasedValues } from "../../src/vault/scrub.js";
import { formsOf } from "../../src/vault/valueForms.js";

/** A real ReleasedValues, with a count of the characters each cut search is given. */
function counted(released: ReleasedValues): { scrubber: LineScrubber; searched: () => number } {
  let searched = 0;
  const scrubber = {
    scrubText: (t: string) => released.scrubText(t),
    longestForm: () => released.longestForm(),
    scrubPieces: (t: string) => released.scrubPieces(t),
    cutter: (t: string) => {
      searched += t.length;
      return released.cutter(t);
    },
    // the interface before cutter (kept so that this test runs against it too)
    cutPoint: (t: string, at: number) => {
      searched += t.length;
      return released.cutPoint(t, at);
    },
  };
  return { scrubber, searched: () => searched };
}

describe("stderr lines: the cost of cutting", () => {
  it("a line without a newline many times the longest form: searched a bounded number of times per character, the value still scrubbed", () => {
    const released = new ReleasedValues();
    const value = "Zq7/w+ é=Xü-9_k4".repeat(3); // 48 characters, forms with escapes and "%"
    released.add("api", value);
    const keep = released.longestForm();
    const { scrubber, searched } = counted(released);
    const shown: string[] = [];
    const maxLine = 256; // far below the longest form (5,904 characters): the case of a long value
    const lines = new StderrLines((l) => shown.push(l), scrubber, maxLine);
    // "%" in the text: the slower search that reads percent spellings and escapes
    const filler = "x%y ".repeat(1024);
    let written = "";
    for (let i = 0; written.length < 12 * keep; i++) {
      // a form of the value now and then, wherever the cuts fall
      const chunk = i % 7 === 3 ? `${filler.slice(0, 1000 + i)}${formsOf(value)[i % 5]}${filler}` : filler;
      lines.push(Buffer.from(chunk));
      written += chunk;
    }
    lines.end();
    // each character searched a few times, not once per cut of the text held behind it
    expect(searched()).toBeLessThan(4 * written.length);
    expect(shown.length).toBeGreaterThan(written.length / (4 * maxLine));
    // pieces of the cap's length (a cut moves only past a form or a stretch of the value), the
    // line's last up to the cap plus the longest form
    const inserted = Math.max(
      ...formsOf(value)
        .slice(0, 5)
        .map((f) => f.length),
    );
    for (const l of shown.slice(0, -1))
      expect(l.replace(CUT_MARK, "").length).toBeLessThan(maxLine + 2 * inserted + 8);
    expect(shown.at(-1)!.length).toBeLessThanOrEqual(maxLine + keep);
    const whole = shown.map((l) => (l.endsWith(CUT_MARK) ? l.slice(0, -CUT_MARK.length) : l)).join("");
    expect(whole).toBe(released.scrubPieces(released.scrubText(written)));
    for (const f of formsOf(value)) expect(whole).not.toContain(f);
  });
});
