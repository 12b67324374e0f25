// Where scrubbing a text can throw (src/vault/scrub.ts throws past MAX_GROWTH; V8 throws past its
// longest string), the text is replaced by a fixed sentence, never shown as it was, and the work
// goes on. Through a real gateway, a server's answer and the debug trace of a client's line are
// covered by test/vault/unscrubbable.test.ts; a server's stderr piece and a log line of the
// gateway cannot be made large enough in a test (a stderr piece is cut at 64 KiB, whose markers
// stay under MAX_GROWTH; the log re-scrubs text already scrubbed, which no longer grows), so here
// a scrubber that throws is given to each instead.
import { describe, expect, it } from "vitest";
import { type LineScrubber, StderrLines } from "../../src/supervisor/stderrLines.js";
import { NOT_SCRUBBED, scrubbedLine, scrubbedStrings, scrubEveryLine } from "../../src/util/log.js";
import { MAX_GROWTH, ReleasedValues } from "../../src/vault/scrub.js";

/** A real scrubber, but one that throws, as past V8's longest string, on any text holding "BOOM". */
function failingOn(released: ReleasedValues, where: "text" | "pieces" | "cutter"): LineScrubber {
  const boom = (t: string) => {
    if (t.includes("BOOM")) throw new RangeError("Invalid string length");
  };
  return {
    scrubText: (t) => {
      if (where === "text") boom(t);
      return released.scrubText(t);
    },
    longestForm: () => released.longestForm(),
    cutter: (t) => {
      if (where === "cutter") boom(t);
      return released.cutter(t);
    },
    scrubPieces: (t) => {
      if (where === "pieces") boom(t);
      return released.scrubPieces(t);
    },
  };
}

describe("scrubbing that throws fails closed", () => {
  it("a server's stderr line: the fixed sentence in its place, the lines after it shown", () => {
    const released = new ReleasedValues();
    released.add("api", "s3cret-value-123");
    for (const where of ["text", "pieces"] as const) {
      const shown: string[] = [];
      const lines = new StderrLines((l) => shown.push(l), failingOn(released, where));
      lines.push(Buffer.from("before s3cret-value-123\nBOOM s3cret-value-123\nafter\n"));
      expect(shown, where).toEqual(["before [redacted:api]", NOT_SCRUBBED, "after"]);
    }
  });

  it("a long stderr line whose cut cannot be found: the text held dropped, the sentence shown, the next line shown", () => {
    const released = new ReleasedValues();
    released.add("api", "s3cret-value-123");
    const shown: string[] = [];
    const lines = new StderrLines((l) => shown.push(l), failingOn(released, "cutter"), 64);
    lines.push(Buffer.from(`BOOM ${"x".repeat(5000)} s3cret-value-123 ${"y".repeat(5000)}`));
    lines.push(Buffer.from(" still the same line\nnext s3cret-value-123\n"));
    lines.end();
    expect(shown.join("\n")).not.toContain("s3cret");
    expect(shown).toContain(NOT_SCRUBBED);
    expect(shown.at(-1)).toBe("next [redacted:api]");
  });

  it("a log line and the strings of a kept record: the sentence in place of what could not be scrubbed", () => {
    scrubEveryLine((t) => {
      if (t.includes("BOOM")) throw new RangeError("Invalid string length");
      return t.replaceAll("s3cret", "[redacted:api]");
    });
    expect(scrubbedLine("a line with s3cret")).toBe("a line with [redacted:api]");
    expect(scrubbedLine("BOOM s3cret")).toBe(NOT_SCRUBBED);
    expect(scrubbedStrings({ argv: ["node", "BOOM s3cret"], cwd: "/s3cret" })).toEqual({
      argv: ["node", NOT_SCRUBBED],
      cwd: "/[redacted:api]",
    });
  });

  it("ReleasedValues throws, not writes, past MAX_GROWTH: a one-character value under a 128-character name", () => {
    const released = new ReleasedValues();
    const name = "n".repeat(128);
    released.add(name, "~");
    const many = "~ ".repeat(Math.ceil(MAX_GROWTH / 138) + 1);
    expect(() => released.scrubText(many)).toThrow(RangeError);
    expect(() => released.scrubLine(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { t: many } }))).toThrow(
      RangeError,
    );
    // just under it: written
    const fewer = "~ ".repeat(Math.floor(MAX_GROWTH / 138) - 1);
    expect(released.scrubText(fewer).length).toBe(fewer.length + 138 * (fewer.length / 2));
  });
});
