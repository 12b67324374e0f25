/**
 * The parts of a review's rendered tool (renderTool, review.ts) told apart: which lines are the
 * server's own words (its title, its description, its inputs, its hints) and which is the
 * gateway's line about the inputs. A description is free text of any number of lines, so it can
 * imitate the lines after it ("  inputs:", a field, an "arguments" block): the review's own
 * layout is read from the end, where no server text can reach. renderTool always writes one
 * "  inputs…" line after the description, and after it only field lines (four spaces first,
 * each one line: safeText escapes a line end) and at most one hints line, so the real inputs
 * line is the last line that reads like one. A rendering of another shape (a review rewritten
 * in the store) gives null, and the whole text is then shown as the server's.
 */
import { displayName } from "../catalog/text.js";

export interface ToolParts {
  /** the tool's title, as the server wrote it (one line), or null */
  title: string | null;
  /** the description's lines, as the server wrote them (none when it gave none) */
  description: string[];
  /**
   * The gateway's line about the inputs without its indent ("inputs:", "inputs (other properties
   * accepted):", "inputs: none declared"), or, when the schema was no object, the words before
   * the server's: "inputs:", with that value in `inputsValue`.
   */
  inputsLine: string;
  /** the schema that was no object, as the server wrote it (one line), or null */
  inputsValue: string | null;
  /** the inputs, one line each, as described by the server's schema */
  inputs: string[];
  /** the server's annotations (JSON, one line), or null */
  hints: string | null;
}

const INPUTS_LINE = /^ {2}inputs[: ]/;
/** renderTool's inputs lines of its own words; any other "  inputs: …" carries the server's schema */
const OWN_INPUTS =
  /^ {2}(inputs:|inputs \(other properties accepted\):|inputs: none declared(?: \(other properties accepted\))?|inputs: \(no input schema\))$/;
const HINTS = "  hints from the server (shown, never trusted): ";

/** The parts of `rendered` (renderTool's output for the tool `name`), or null when it is not of that shape. */
export function toolParts(rendered: string, name: string): ToolParts | null {
  const lines = rendered.split("\n");
  const head = displayName(name);
  const first = lines[0] ?? "";
  if (!first.startsWith(head)) return null;
  const rest = first.slice(head.length);
  let title: string | null = null;
  if (rest.startsWith(" — ")) title = rest.slice(3);
  else if (rest !== "") return null;
  let at = -1;
  for (let i = lines.length - 1; i >= 1; i--) {
    if (INPUTS_LINE.test(lines[i]!)) {
      at = i;
      break;
    }
  }
  if (at === -1) return null;
  const description = lines.slice(1, at);
  if (description.some((l) => !l.startsWith("  "))) return null;
  const after = lines.slice(at + 1);
  let hints: string | null = null;
  const last = after[after.length - 1];
  if (last?.startsWith(HINTS)) {
    hints = last.slice(HINTS.length);
    after.pop();
  }
  if (after.some((l) => !l.startsWith("    "))) return null;
  const inputsText = lines[at]!;
  const own = OWN_INPUTS.test(inputsText);
  return {
    title,
    description: description.map((l) => l.slice(2)),
    inputsLine: own ? inputsText.trim() : "inputs:",
    inputsValue: own ? null : inputsText.slice("  inputs: ".length),
    inputs: after.map((l) => l.slice(4)),
    hints,
  };
}
