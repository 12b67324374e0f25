// Where a JSON document stops being JSON, said in words, with a line and a column, and never with
// the document's text. V8's JSON.parse message quotes the characters around the error
// (`Unexpected token 's', ..."{"TOKEN": sk-live-ab"... is not valid JSON`), and the error of a
// configuration or host file is printed on stderr (a gateway's goes to its host's MCP log) and by
// doctor: a token pasted into `env` without its quotes would be repeated there.
import { createRequire } from "node:module";
import type { ParseError } from "jsonc-parser";

type JsoncParser = typeof import("jsonc-parser");

/** jsonc-parser, loaded only to explain a file that did not parse (the gateway starts without it). */
function jsonc(): JsoncParser {
  return createRequire(import.meta.url)("jsonc-parser") as JsoncParser;
}

/** What each of jsonc-parser's error codes means, for a person fixing the file. */
const WORDS: Record<string, string> = {
  InvalidSymbol: "something that is not a JSON value, such as a string without its double quotes",
  InvalidNumberFormat: "a malformed number",
  PropertyNameExpected: "a property name in double quotes was expected",
  ValueExpected: "a value was expected",
  ColonExpected: "':' was expected after the property name",
  CommaExpected: "',' was expected",
  CloseBraceExpected: "'}' was expected",
  CloseBracketExpected: "']' was expected",
  EndOfFileExpected: "the document was expected to end",
  InvalidCommentToken: "a comment, which JSON does not allow",
  UnexpectedEndOfComment: "a comment that is never closed",
  UnexpectedEndOfString: "a string that is never closed by a '\"'",
  UnexpectedEndOfNumber: "a number that ends too soon",
  InvalidUnicode: "a malformed \\u escape",
  InvalidEscapeCharacter: "a backslash escape JSON does not have",
  InvalidCharacter: "a control character inside a string, to be written as an escape such as \\n",
};

/** Line and column (both from 1) of an offset into a text. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf("\n") + 1;
  return { line: before.split("\n").length, column: offset - lineStart + 1 };
}

/**
 * One of jsonc-parser's errors as "line L, column C: what". A property name or a value expected
 * where a `}` or `]` closes the object after a comma is said as the trailing comma it is.
 */
export function describeParseError(text: string, error: ParseError): string {
  const name = jsonc().printParseErrorCode(error.error);
  let at = error.offset;
  let what = WORDS[name] ?? "the text is not JSON";
  if (name === "PropertyNameExpected" || name === "ValueExpected") {
    const next = text[error.offset];
    const comma = /,\s*$/.exec(text.slice(0, error.offset));
    if ((next === "}" || next === "]") && comma) {
      at = comma.index;
      what = `a comma before '${next}', which JSON does not allow`;
    }
  }
  const { line, column } = lineAndColumn(text, at);
  return `line ${line}, column ${column}: ${what}`;
}

/**
 * Why `text`, which JSON.parse refused, is not JSON: "the file is empty", or the first error as
 * `describeParseError` says it. `fallback` is the parse error, of which only a position is used
 * should the two parsers disagree.
 */
export function jsonSyntaxProblem(text: string, fallback: unknown): string {
  if (text.trim() === "") return "the file is empty";
  const errors: ParseError[] = [];
  try {
    jsonc().parse(text, errors, {
      disallowComments: true,
      allowTrailingComma: false,
      allowEmptyContent: false,
    });
  } catch (e) {
    // jsonc-parser reads recursively: a document nested thousands deep exhausts the stack, and the
    // errors it found before that are still the first ones
    if (!(e instanceof RangeError)) throw e;
  }
  if (errors.length > 0) return describeParseError(text, errors[0]!);
  const said = fallback instanceof Error ? fallback.message : "";
  const at = /at position (\d+)/.exec(said)?.[1];
  // a document cut short inside thousands of brackets: jsonc-parser notes the missing bracket only
  // as its recursion unwinds, which the stack did not allow, and V8 names no position for it
  if (at === undefined && said.includes("end of JSON input")) {
    const { line, column } = lineAndColumn(text, text.length);
    return `line ${line}, column ${column}: the text ends before its JSON does (a bracket or a brace is not closed)`;
  }
  if (at === undefined) return "the text is not JSON";
  const { line, column } = lineAndColumn(text, Number(at));
  return `line ${line}, column ${column}: the text is not JSON`;
}
