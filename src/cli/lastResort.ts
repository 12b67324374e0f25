// What the process writes to its stderr when something went badly wrong, outside the Logger: the
// command line's "internal error" (src/cli/main.ts), and an exception nothing caught or a promise
// rejection nothing handled, which node would print itself, message and stack as they are, and
// node's own warnings (`(node:PID) Warning: …`), printed by node as they were emitted. An
// error's message can quote what a peer sent (a parse error quotes its input) or what the process
// holds, and in a gateway that includes the credential values the vault released to its server:
// here they are scrubbed as the Logger's lines are (src/vault/scrub.ts), then redacted as text.
import { cutText } from "../util/cut.js";
import { NOT_SCRUBBED, visibleControls } from "../util/log.js";
import { redactText } from "../util/redact.js";

/** A set of released values (ReleasedValues, src/vault/scrub.ts): what it scrubs a text of. */
interface Scrubber {
  readonly size: number;
  scrubText(text: string): string;
  scrubPieces(text: string): string;
}

/** Every set of released values of this process (one per gateway: src/cli/serve.ts). */
const released = new Set<Scrubber>();

/** The values `values` holds, now or later, are scrubbed from whatever is written here. */
export function scrubAtLastResort(values: Scrubber): void {
  released.add(values);
}

/**
 * `text` as it may be written: every released value scrubbed, then, as the Logger writes a line,
 * each line's C0 and C1 controls written as escapes (a quoted ESC or CR neither acts on the
 * terminal nor shows a value it split whole) and the whole redacted as text. Its line breaks
 * stay: a stack is read line by line.
 */
export function lastResortText(text: string): string {
  // scrubbed whole first: a value the cut below runs through is still found whole
  let out = text;
  for (const r of released) if (r.size > 0) out = r.scrubText(out);
  // A message may quote megabytes (a peer's whole line): its start says what happened, and the
  // search for pieces of values, which tries every position, is bounded.
  if (out.length > MAX_SHOWN)
    out = `${cutText(out, MAX_SHOWN)} [${out.length - MAX_SHOWN} more characters not shown]`;
  for (const r of released) if (r.size > 0) out = r.scrubPieces(out);
  // and once more as written: a control written as an escape (ESC as `\u001b`) may spell a value
  // that holds such text anew
  return scrubReleased(redactText(out.split("\n").map(visibleControls).join("\n")));
}

/** The most characters of an error shown (after scrubbing: a marker counts as written). */
const MAX_SHOWN = 64 * 1024;

/**
 * `text` (a sentence) with every released value scrubbed, and nothing else changed: each of its
 * forms, then any piece of 8 characters or more of one as written, since an error's message may
 * quote a value cut short (ReleasedValues.scrubPieces).
 */
export function scrubReleased(text: string): string {
  let out = text;
  for (const r of released) if (r.size > 0) out = r.scrubPieces(r.scrubText(out));
  return out;
}

/**
 * Writes `portcullis: internal error<how>: <the error>`, the error by its stack (its name and
 * message, then where it was thrown) through lastResortText. Not as node's own report: that
 * prints the source line of the throw first, which for JSON.parse is the whole text it failed on,
 * and util.inspect's properties show a Buffer's bytes as spaced hex, which scrubbing does not know.
 * Should scrubbing fail, the error is said to have happened but not shown: never a text that was
 * not scrubbed.
 */
export function reportInternalError(e: unknown, how = ""): void {
  let shown: string;
  try {
    const stack = e instanceof Error ? e.stack : undefined;
    shown = lastResortText(typeof stack === "string" ? stack : String(e));
  } catch {
    shown = NOT_SCRUBBED;
  }
  try {
    process.stderr.write(`portcullis: internal error${how}: ${shown}\n`);
  } catch {
    // stderr is gone: the exit code still says it
  }
}

/**
 * The warning node's own listener is given in place of `w`: an Error of the same name, code,
 * message, stack and detail, each through lastResortText. Node's listener reads nothing else of
 * it, and picks from these what its flags ask for. Should scrubbing fail, the warning is said
 * to have been emitted but not shown.
 */
function scrubbedWarning(w: Error & { code?: unknown; detail?: unknown }): Error {
  const out: Error & { code?: string; detail?: string } = new Error();
  try {
    out.name = lastResortText(String(w.name));
    out.message = lastResortText(String(w.message));
    out.stack = typeof w.stack === "string" ? lastResortText(w.stack) : `${out.name}: ${out.message}`;
    if (w.code !== undefined) out.code = lastResortText(String(w.code));
    if (typeof w.detail === "string") out.detail = lastResortText(w.detail);
  } catch {
    out.name = "Warning";
    out.message = NOT_SCRUBBED;
    out.stack = `${out.name}: ${out.message}`;
    delete out.code;
    delete out.detail;
  }
  return out;
}

/**
 * Puts the scrubbing in front of node's own printing of warnings (`(node:PID) Warning: …`,
 * DeprecationWarning, MaxListenersExceededWarning, …), whose text can quote what a peer sent or
 * a value the process holds. Node installs its printer at startup as a 'warning' listener (the
 * function `onWarning`), only when warnings are on (no `--no-warnings`, no NODE_NO_WARNINGS=1):
 * it is taken off and given each warning scrubbed instead, so a warning prints as it did, with
 * every flag of node's honoured as before (`--trace-warnings`, `--trace-deprecation`,
 * `--no-deprecation`, `--disable-warning`, `--redirect-warnings`), and with warnings off nothing
 * is added. Another listener (a module preloaded with --import) still gets the warning itself.
 */
function scrubWarnings(): void {
  for (const listener of process.listeners("warning")) {
    if (listener.name !== "onWarning") continue;
    process.removeListener("warning", listener);
    process.on("warning", (w) => {
      if (w instanceof Error) listener(scrubbedWarning(w));
    });
  }
}

let installed = false;

/**
 * Takes over node's own report of an uncaught exception and of an unhandled rejection: the same
 * report through lastResortText, and the exit code node gives both (1). And node's printing of
 * warnings, which then prints each warning through lastResortText (scrubWarnings).
 */
export function installLastResort(): void {
  if (installed) return;
  installed = true;
  scrubWarnings();
  process.on("uncaughtException", (e) => {
    reportInternalError(e, " (uncaught exception)");
    process.exit(1);
  });
  process.on("unhandledRejection", (e) => {
    reportInternalError(e, " (unhandled rejection)");
    process.exit(1);
  });
}
