// Every regular expression of the redactor, read from its source: none may repeat with a quantifier
// that V8 runs, compiled unoptimized, as a loop keeping one backtracking entry per repetition.
// Such a loop throws RangeError past 64 MiB of entries, and a call argument can be that long: the
// rule that threw no longer redacts, and the whole string comes out `[redacted]` (or, before
// session twenty-eight, the error reached the caller). V8 compiles a pattern unoptimized in a
// long-lived process that has compiled much regular-expression code, so a pattern that passes
// every test in a fresh process can fail in a gateway that has run for days
// (test/util/redact-unoptimized.test.ts runs the long shapes that way; this file keeps a NEW
// pattern from bringing the shape back; test/unit/regex-loops.test.ts reads every other file
// under src/ with the same helper, test/helpers/regexLoops.ts).
//
// Allowed: `*` (and `*?`) over one character, escape or class, or over a group that captures
// nothing and holds neither an alternative nor a quantifier (`(?:%[0-9A-F][0-9A-F])*`), which V8 runs with one entry however
// it compiled the pattern; bounded counts `{n}`, `{n,m}`; `?`. Flagged: `+`, `{n,}`, and `*` over
// a capturing group or one with an alternative or a quantifier inside, even `{2}` (each seen to throw under
// `--no-regexp-optimization`). A flagged pattern is either rewritten (`[…]+` as `[…][…]*`) or
// listed in BOUNDED_INPUT with the reason its input is short.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { regexLiterals, unboundedLoops } from "../helpers/regexLoops.js";

const FILES = [
  "src/util/redact.ts",
  ...readdirSync("src/util/redact")
    .filter((f) => f.endsWith(".ts"))
    .map((f) => join("src/util/redact", f)),
];

/**
 * Patterns whose input is bounded before they run, so that a loop's entries cannot pile up:
 * file, the pattern as written, why.
 */
const BOUNDED_INPUT: [string, string, string][] = [
  [
    "src/util/redact/text.ts",
    "/^[A-Za-z]+$/",
    "runs only on a word already checked shorter than LONGEST_WORD",
  ],
  [
    "src/util/redact/names.ts",
    "/[^A-Za-z0-9]+/",
    "words() splits a name already checked no longer than LONGEST_NAME_READ",
  ],
];

describe("the redactor's regular expressions", () => {
  it("reads loops the way V8's unoptimized compile runs them", () => {
    expect(unboundedLoops("/[^\\s]+/")).toEqual(["[^\\s]+"]);
    expect(unboundedLoops("/[^\\s][^\\s]*/")).toEqual([]);
    expect(unboundedLoops("/(?:ab)*c/")).toEqual([]);
    expect(unboundedLoops("/(?:%[0-9A-F]{2})*/")).toEqual(["(?:%[0-9A-F]{2})*"]);
    expect(unboundedLoops("/(ab)*c/")).toEqual(["(ab)*"]);
    expect(unboundedLoops("/(?:a|b)*c/")).toEqual(["(?:a|b)*"]);
    expect(unboundedLoops("/(?:ab?)*c/")).toEqual(["(?:ab?)*"]);
    expect(unboundedLoops("/(?:a(?:b|c))*d/")).toEqual(["(?:a(?:b|c))*"]);
    expect(unboundedLoops("/[A-Za-z0-9]{16,}/")).toEqual(["[A-Za-z0-9]{16,}"]);
    expect(unboundedLoops("/[A-Za-z0-9]{16,40}x?/")).toEqual([]);
    expect(unboundedLoops("/a\\+b[+*]{/")).toEqual([]);
    expect(unboundedLoops("/\\w+?=/i")).toEqual(["\\w+"]);
    expect(unboundedLoops("/[]x]+/")).toEqual(["[]x]+"]);
  });

  it("repeat no run with a loop that keeps an entry per character, unless their input is bounded", () => {
    const offending: string[] = [];
    const seen = new Set<string>();
    for (const file of FILES) {
      for (const literal of regexLiterals(file)) {
        if (unboundedLoops(literal).length === 0) continue;
        const key = `${file} ${literal}`;
        seen.add(key);
        if (!BOUNDED_INPUT.some(([f, p]) => f === file && p === literal))
          offending.push(`${key}: ${unboundedLoops(literal).join(", ")}`);
      }
    }
    expect(offending).toEqual([]);
    // An entry whose pattern is gone or rewritten is stale: it would let the next one through.
    expect(BOUNDED_INPUT.map(([f, p]) => `${f} ${p}`).filter((k) => !seen.has(k))).toEqual([]);
  });
});
