import { markHidden } from "../catalog/text.js";
import { redactText } from "./redact.js";
import { setOwn } from "./setOwn.js";

/**
 * Everything human goes to stderr: stdout of `portcullis run` carries MCP only.
 * Callers pass names and digests; every line is still redacted as text on its way out, because
 * a status line can quote a path or a command a secret was part of.
 */
export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  /** a status line (`build complete: …`), printed with the server label like every other line */
  status(line: string): void;
  debug(msg: string): void;
  /**
   * A line this process made whole for the human, quoting nothing a peer said: printed without
   * the redaction of text. The console's link carries its ticket (src/console/ticket.ts), a value
   * the text redaction takes for a credential in a URL's query and would hide from the very
   * person it is printed for. Absent: `info`.
   */
  own?(msg: string): void;
  /** false when debug lines go nowhere, so a hot path can skip building one (absent: unknown) */
  readonly debugging?: boolean;
}

/** What every line is scrubbed with first (scrubEveryLine). */
const lineScrubs: ((text: string) => string)[] = [];

/**
 * From now on every line a logger of this process writes, and every status line a gateway keeps
 * in the store (src/gateway/registry.ts), passes through `scrub` first: a gateway's released
 * credential values (src/cli/serve.ts). Here, not per logger: lines come from every part of the
 * gateway (the supervisor, the identity capture's warnings, the remote link, the egress proxy),
 * and quote what a server can choose (a file it named, a link's target).
 */
export function scrubEveryLine(scrub: (text: string) => string): void {
  lineScrubs.push(scrub);
}

/** What is shown in place of a text its scrubbing failed on: never the text itself. */
export const NOT_SCRUBBED = "(not shown: it could not be scrubbed)";

/**
 * `scrub(text)`, or NOT_SCRUBBED should scrubbing throw: it can (a text whose markers would take
 * it past what a scrub may write, src/vault/scrub.ts), and a line the gateway logs or repeats is
 * then not shown rather than shown unscrubbed or left to end the gateway.
 */
export function scrubbedOr(scrub: (text: string) => string, text: string): string {
  try {
    return scrub(text);
  } catch {
    return NOT_SCRUBBED;
  }
}

/** `text` through every scrub given to scrubEveryLine (NOT_SCRUBBED should one of them fail). */
export function scrubbedLine(text: string): string {
  let out = text;
  for (const scrub of lineScrubs) out = scrubbedOr(scrub, out);
  return out;
}

/**
 * A JSON value with every string in it, keys included, through scrubbedLine: what the gateway
 * keeps of a server's processes (an execution record: argv, paths), which the server chooses as
 * it chooses its log lines (it may exec itself with a released value as an argument).
 */
export function scrubbedStrings<T>(value: T): T {
  if (lineScrubs.length === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return scrubbedLine(v);
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v !== "object" || v === null) return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) setOwn(out, scrubbedLine(k), walk(x));
    return out;
  };
  return walk(value) as T;
}

let stderrGone = false;
let stderrGuarded = false;
/** log lines not written since our stderr backed up past LOG_BACKLOG_BYTES */
let droppedLines = 0;

/** How much of the log may wait to be written to our stderr; lines past it are dropped (counted). */
export const LOG_BACKLOG_BYTES = 4 * 1024 * 1024;

/**
 * A closed stderr (the agent host died: its end of the pipe is gone) must not end the process:
 * node reports EPIPE as an 'error' event, and without a listener that is an uncaught exception,
 * which would skip the shutdown that ends the server's processes (a `node --watch` server would be
 * left running). Lines written after it are dropped; the closed stdin or stdout ends the run.
 */
function guardStderr(): void {
  if (stderrGuarded) return;
  stderrGuarded = true;
  process.stderr.on("error", () => {
    stderrGone = true;
  });
}

export function stderrLogger(label: string, verbose = process.env.PORTCULLIS_DEBUG === "1"): Logger {
  guardStderr();
  // Controls made visible first: a line quotes what peers said (a server's error message, which
  // the server chose whole: "boom\x1b[2J\rportcullis[x]: approved\n…"), and raw, its ESC, CR or
  // newline would clear the host's terminal or forge lines of the gateway's own.
  const out = (s: string, redact = true) => {
    if (stderrGone) return;
    // Nobody reads our stderr (or slower than we write it): past the bound, lines are counted,
    // not kept (a server's junk, warned about line by line, grew the gateway without end).
    if (process.stderr.writableLength >= LOG_BACKLOG_BYTES) {
      droppedLines++;
      return;
    }
    if (droppedLines > 0) {
      process.stderr.write(
        `portcullis[${label}]: warning: ${droppedLines} lines of the gateway's log were dropped: its stderr was not read\n`,
      );
      droppedLines = 0;
    }
    const visible = visibleFormatting(visibleControls(scrubbedLine(s)));
    process.stderr.write(`${redact ? redactText(visible) : visible}\n`);
  };
  return {
    info: (m) => out(`portcullis[${label}]: ${m}`),
    own: (m) => out(`portcullis[${label}]: ${m}`, false),
    warn: (m) => out(`portcullis[${label}]: warning: ${m}`),
    // The label says which server a line is about: a host's log mixes every server's stderr.
    status: (line) => out(`portcullis[${label}]: ${line}`),
    debug: (m) => {
      if (verbose) out(`portcullis[${label}]: debug: ${m}`);
    },
    debugging: verbose,
  };
}

/**
 * `text` with every C0 and C1 control but tab (and DEL) written as `\u00XX`, before it is
 * scrubbed: raw, a server's ESC or CR would move the cursor, rewrite the line or start a terminal
 * sequence in the host's log, and a value split by one (`abc\x1b[0mdef`) would show whole on a
 * terminal while no scrubbing sees it whole.
 */
export function visibleControls(text: string): string {
  return text.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * `text` (controls already made visible) with every other character a reader cannot see for what
 * it is written as its escape (`\u202e`; markHidden's: bidi overrides and isolates, zero-width
 * and other format characters, separators but the space, a lone surrogate), tab kept. The
 * gateway's own lines quote what peers said (a server's method name, an id), and a right-to-left
 * override there reordered the rest of the gateway's line in the host's log, so that it read as
 * the peer chose; `status` and every other view escape them already (safeText).
 */
export function visibleFormatting(text: string): string {
  return markHidden(text, (cp) =>
    cp === 0x09 ? "\t" : cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, "0")}`,
  );
}

/** C0 but tab, DEL and C1. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the controls are what it finds
const CONTROLS = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;
