// Reads the regular-expression literals of a TypeScript source and the loops in them that V8,
// compiling the pattern unoptimized, runs keeping one backtracking entry per repetition (RangeError
// past 64 MiB of entries). Shared by test/util/redact-patterns.test.ts (the redactor) and
// test/unit/regex-loops.test.ts (every other file under src/); the rules are in the former's header.
import { readFileSync } from "node:fs";
import ts from "typescript";

/** The regular-expression literals of a TypeScript file, as written (`/…/flags`). */
export function regexLiterals(file: string): string[] {
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
export function unboundedLoops(literal: string): string[] {
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
      // `\p{L}`, `\u{41}`, `\k<name>`: one atom with its braces, not an escape then a count
      const close = /^[pPu]\{/.test(body.slice(i + 1, i + 3))
        ? body.indexOf("}", i)
        : body[i + 1] === "k" && body[i + 2] === "<"
          ? body.indexOf(">", i)
          : -1;
      i = close === -1 ? i + 2 : close + 1;
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
