// A server's stderr as lines for the gateway's own stderr: decoded as UTF-8 across chunks, split
// on newlines, a line longer than the cap cut into pieces, and every piece scrubbed of released
// credential values (src/vault/scrub.ts) before it is shown: every form of each, then any stretch
// of 8 characters or more of one as written (a server that logs a key's start, an error quoting
// the start of what it failed on). A hostile server that writes megabytes without a newline costs
// bounded memory and linear time, control characters are shown as escapes (visibleControls), and
// a value cannot be split by a cut so that neither piece shows it whole to the scrubber, nor a
// stretch of pieces of one split into parts too short to be recognised.
import { StringDecoder } from "node:string_decoder";
import { NOT_SCRUBBED, visibleControls } from "../util/log.js";

/** What the pieces are scrubbed with (ReleasedValues implements it). */
export interface LineScrubber {
  scrubText(text: string): string;
  /** the length of the longest text scrubText replaces */
  longestForm(): number;
  /**
   * `text` searched once; the function returned gives the first position at or after `at` where
   * `text` can be cut without splitting what scrubText replaces, nor (`pieces`) what scrubPieces
   * after it replaces around a marker
   */
  cutter(text: string, pieces?: boolean): (at: number) => number;
  /** `text` with every stretch of PIECE characters or more of a value, as written, replaced */
  scrubPieces(text: string): string;
}

/** The shortest piece of a value scrubPieces replaces (ReleasedValues.scrubPieces). */
const PIECE = 8;

/** The longest piece of a line shown on its own (characters), unless a scrubbed value runs past it. */
export const MAX_STDERR_LINE = 64 * 1024;

/** What ends a piece cut from a longer line. */
export const CUT_MARK = " [line cut: continued on the next line]";

export class StderrLines {
  private readonly decoder = new StringDecoder("utf8");
  /** the current line's text not shown yet: at most the cap plus the longest form */
  private pending = "";
  /** how long the pending line must be before cutLong scans it again (after a cut had to wait) */
  private waitFor = 0;

  private readonly maxLine: number;

  constructor(
    private readonly show: (line: string) => void,
    private readonly scrubber: LineScrubber | null = null,
    maxLine = MAX_STDERR_LINE,
  ) {
    this.maxLine = Math.max(2, maxLine); // room for a whole surrogate pair
  }

  push(chunk: Buffer): void {
    this.closed(() => this.take(this.decoder.write(chunk)));
  }

  /** The stream ended: what is left of the last line, if anything, is shown. */
  end(): void {
    this.closed(() => {
      this.take(this.decoder.end());
      if (this.pending !== "") this.finish();
    });
  }

  /**
   * `work`, failing closed: should the scrubber throw (src/vault/scrub.ts), the text held is
   * dropped and NOT_SCRUBBED shown in its place, never the text, and the server's stderr is read
   * on (a throw here reached the supervisor's stream handler and ended the gateway).
   */
  private closed(work: () => void): void {
    try {
      work();
    } catch {
      this.pending = "";
      this.waitFor = 0;
      this.show(NOT_SCRUBBED);
    }
  }

  private take(text: string): void {
    let from = 0;
    // only the new text is searched: the pending part holds no newline
    for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", from)) {
      this.pending += text.slice(from, nl);
      from = nl + 1;
      this.finish();
    }
    this.pending += text.slice(from);
    this.cutLong();
  }

  /**
   * Shows pieces of the pending line while it is longer than the cap plus the longest form. The
   * text past each cut runs on for at least the longest form, so a value across the cut is seen
   * whole by the cutter, and the cut moves to its end: scrubbing each piece replaces what
   * scrubbing the whole line would.
   *
   * Finding the cuts scans all the text held, and with a long value released the longest form
   * runs to millions of characters (a 60,000-character value: 7.1 M), far more than a piece: so
   * the text is scanned once for every cut it can give, and only once so much is held that those
   * cuts show at least the longest form's length of it (or, after a cut had to wait for more of
   * the line, once that much more has come). Each character is then scanned a bounded number of
   * times, whatever the values' length: the cost is linear in what the server writes.
   *
   * `last`: the line is whole (its newline came, or the stream ended), nothing past it can
   * complete a form: what is held past the cap plus the longest form is cut as well (a cut then
   * needs nothing after it), not shown in one piece of up to twice the longest form.
   */
  private cutLong(last = false): void {
    const keep = Math.max(0, (this.scrubber?.longestForm() ?? 0) - 1);
    const after = last ? 0 : keep; // what must follow a cut for it to be decided
    const enough = this.maxLine + keep + (!last && this.scrubber && keep > this.maxLine ? keep : 0);
    if (this.pending.length <= enough || (!last && this.pending.length < this.waitFor)) return;
    const cutAt = this.scrubber?.cutter(this.pending, true) ?? null;
    let from = 0;
    // strictly longer: something is always left after a cut, so a line never ends on a cut piece
    // (and a whole line's last piece is, as ever, up to the cap plus the longest form)
    while (this.pending.length - from > this.maxLine + keep) {
      let at = from + this.maxLine;
      if (isHighSurrogate(this.pending.charCodeAt(at - 1))) at -= 1; // never half a character
      // every form that starts before `at` ends within `keep` characters past it
      if (cutAt) {
        const past = this.pastPieces(Math.min(cutAt(at), at + keep), keep, after, from, cutAt);
        if (past !== null && past >= this.pending.length) break; // the rest is one piece: shown whole
        if (past === null) {
          // more of the line is needed to know where to cut it: not scanned again before then
          this.waitFor = this.pending.length - from + Math.max(this.maxLine, keep);
          break;
        }
        at = past;
      }
      this.show(this.scrubbed(this.pending.slice(from, at)) + CUT_MARK);
      from = at;
    }
    this.pending = this.pending.slice(from);
  }

  /**
   * `at`, a cut that splits no form, or the first such cut after it that splits no stretch of
   * pieces of a value either (scrubbed on either side of a cut, its parts could each be shorter
   * than PIECE). Each cut tried is a cutAt with `after` characters after it (`keep`, the longest
   * form, or none once the line is whole), as cutLong's is; null when the text held does not reach
   * that far: the cut waits for more of the line. A stretch of pieces that runs on past twice
   * `keep` (the text a value alone can fill) is cut there anyway, which bounds what is held.
   * `from`: where the piece being cut starts.
   */
  private pastPieces(
    at: number,
    keep: number,
    after: number,
    from: number,
    cutAt: (at: number) => number,
  ): number | null {
    while (this.piecesAcross(at, from)) {
      // the first place past the stretch (cheap: a few characters are looked at), then the first
      // cut there that splits no form
      let next = at + 1;
      while (next < this.pending.length && (this.piecesAcross(next, from) || splitsPair(this.pending, next)))
        next++;
      if (next + after > this.pending.length)
        return this.pending.length - from > this.maxLine + 2 * keep + PIECE ? at : null;
      at = Math.min(cutAt(next), next + keep);
    }
    return at;
  }

  /** Whether a stretch of PIECE characters that scrubPieces replaces runs across `at`, as shown. */
  private piecesAcross(at: number, from: number): boolean {
    if (at <= from || at >= this.pending.length) return false;
    const before = visibleControls(this.pending.slice(Math.max(from, at - PIECE), at)).slice(1 - PIECE);
    const after = visibleControls(this.pending.slice(at, at + PIECE)).slice(0, PIECE - 1);
    const around = before + after;
    for (let i = 0; i < before.length && i + PIECE <= around.length; i++) {
      const w = around.slice(i, i + PIECE);
      if (this.scrubber!.scrubPieces(w) !== w) return true;
    }
    return false;
  }

  /** The line is whole: cut at the cap (nothing past it can complete a form), the rest shown. */
  private finish(): void {
    this.cutLong(true);
    const line = this.pending;
    this.pending = "";
    this.waitFor = 0;
    this.show(this.scrubbed(line));
  }

  /** A piece as shown: NOT_SCRUBBED in its place should its scrubbing throw. */
  private scrubbed(text: string): string {
    const visible = visibleControls(text);
    if (!this.scrubber) return visible;
    try {
      return this.scrubber.scrubPieces(this.scrubber.scrubText(visible));
    } catch {
      return NOT_SCRUBBED;
    }
  }
}

/** Whether cutting `text` at `at` would split a surrogate pair. */
function splitsPair(text: string, at: number): boolean {
  return isHighSurrogate(text.charCodeAt(at - 1)) && isLowSurrogate(text.charCodeAt(at));
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
