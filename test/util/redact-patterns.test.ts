// Every regular expression of the redactor, read from its source: none may repeat with a quantifier
// that V8 runs, compiled unoptimized, as a loop keeping one backtracking entry per repetition.
// Such a loop throws RangeError past 64 MiB of entries, and a call argument can be that long: the
// rule that threw no longer redacts, and the whole string comes out `[redacted]` (or, before
// session twenty-eight, the error reached the caller). V8 compiles a pattern unoptimized in a
// long-lived process that has compiled much regular-expression code, so a pattern that passes
// every test in a fresh process can fail in a gateway that has run for days
// (test/util/redact-unoptimized.test.ts runs the long shapes that way; this file keeps a NEW
// pattern from bringing the shape back).
//
// Allowed: `*` (and `*?`) over one character, escape or class, or over a group that captures
// nothing and holds neither an alternative nor a quantifier (`(?:%[0-9A-F][0-9A-F])*`), which V8 runs with one entry however
// it compiled the pattern; bounded counts `{n}`, `{n,m}`; `?`. Flagged: `+`, `{n,}`, and `*` over
// a capturing group or one with an alternative or a quantifier inside, even `{2}` (each seen to throw under
// `--no-regexp-optimization`). A flagged pattern is either rewritten (`[…]+` as `[…][…]*`) or
// listed in BOUNDED_INPUT with the reason its input is short.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

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

/** The regular-expression literals of a TypeScript file, as written (`/…/flags`). */
function regexLiterals(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, false);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) found.push(node.getText(source));
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The quantifiers of a pattern that keep an entry per repetition when compiled unoptimized. */
function unboundedLoops(literal: string): string[] {
  const body = literal.slice(1, literal.lastIndexOf("/"));
  const flagged: string[] = [];
  /** the previous atom: where it began, and for a group whether `*` may repeat it (see above) */
  let atom: { start: number; group: boolean; plain?: boolean } | null = null;
  /** the groups open at this point: where each began, and whether it is still plain */
  const groups: { start: number; plain: boolean }[] = [];
  const spoilOpenGroups = () => {
    for (const g of groups) g.plain = false;
  };
  let i = 0;
  while (i < body.length) {
    const c = body[i];
    if (c === "\\") {
      atom = { start: i, group: false };
      i += 2;
    } else if (c === "[") {
      const start = i;
      i++;
      if (body[i] === "^") i++;
      if (body[i] === "]") i++; // a leading `]` is a character of the class
      while (i < body.length && body[i] !== "]") i += body[i] === "\\" ? 2 : 1;
      i++;
      atom = { start, group: false };
    } else if (c === "(") {
      groups.push({ start: i, plain: body.startsWith("(?:", i) });
      atom = null;
      i += body.startsWith("(?:", i) ? 3 : 1;
    } else if (c === ")") {
      const g = groups.pop() ?? { start: 0, plain: false };
      atom = { start: g.start, group: true, plain: g.plain };
      i++;
    } else if (c === "|") {
      spoilOpenGroups();
      atom = null;
      i++;
    } else if (c === "+" || c === "*" || c === "?" || c === "{") {
      let end = i + 1;
      let unbounded = c === "+" || (c === "*" && atom?.group === true && atom.plain !== true);
      if (c === "{") {
        const close = body.indexOf("}", i);
        const count = close === -1 ? "" : body.slice(i + 1, close);
        if (!/^\d+(,\d*)?$/.test(count)) {
          // a literal `{`
          atom = { start: i, group: false };
          i++;
          continue;
        }
        end = close + 1;
        unbounded = count.endsWith(",");
      }
      if (unbounded && atom !== null) flagged.push(body.slice(atom.start, end));
      spoilOpenGroups(); // a group with a quantifier inside, even `{2}`, threw when repeated
      i = end;
      if (body[i] === "?") i++; // lazy
      atom = null;
    } else {
      atom = { start: i, group: false };
      i++;
    }
  }
  return flagged;
}

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
