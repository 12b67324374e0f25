// A server's stderr as lines for the gateway's own stderr: decoded as UTF-8 across chunks, split
// on newlines, a line longer than the cap cut into pieces, and every piece scrubbed of released
// credential values (src/vault/scrub.ts) before it is shown: every form of each, then any stretch
// of 8 characters or more of one as written (a server that logs a key's start, an error quoting
// the start of what it failed on). A hostile server that writes megabytes without a newline costs
// bounded memory and linear time, control characters are shown as escapes (visibleControls), and
// a value cannot be split by a cut so that neither piece shows it whole to the scrubber, nor a
// stretch of pieces of one split into parts too short to be recognised.
import { StringDecoder } from "node:string_decoder";
import { visibleControls } from "../util/log.js";

/** What the pieces are scrubbed with (ReleasedValues implements it). */
export interface LineScrubber {
  scrubText(text: string): string;
  /** the length of the longest text scrubText replaces */
  longestForm(): number;
  /** the first position at or after `at` where `text` can be cut without splitting what scrubText replaces */
  cutPoint(text: string, at: number): number;
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

  private readonly maxLine: number;

  constructor(
    private readonly show: (line: string) => void,
    private readonly scrubber: LineScrubber | null = null,
    maxLine = MAX_STDERR_LINE,
  ) {
    this.maxLine = Math.max(2, maxLine); // room for a whole surrogate pair
  }

  push(chunk: Buffer): void {
    this.take(this.decoder.write(chunk));
  }

  /** The stream ended: what is left of the last line, if anything, is shown. */
  end(): void {
    this.take(this.decoder.end());
    if (this.pending !== "") this.finish();
  }

  private take(text: string): void {
    let from = 0;
    // only the new text is searched: the pending part holds no newline
    for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", from)) {
      this.pending += text.slice(from, nl);
      from = nl + 1;
      this.cutLong();
      this.finish();
    }
    this.pending += text.slice(from);
    this.cutLong();
  }

  /**
   * Shows pieces of the pending line while it is longer than the cap plus the longest form. The
   * text past each cut runs on for at least the longest form, so a value across the cut is seen
   * whole by cutPoint, and the cut moves to its end: scrubbing each piece replaces what
   * scrubbing the whole line would.
   */
  private cutLong(): void {
    const keep = Math.max(0, (this.scrubber?.longestForm() ?? 0) - 1);
    // strictly longer: something is always left after a cut, so a line never ends on a cut piece
    while (this.pending.length > this.maxLine + keep) {
      let at = this.maxLine;
      if (isHighSurrogate(this.pending.charCodeAt(at - 1))) at -= 1; // never half a character
      // every form that starts before `at` ends within `keep` characters past it
      if (this.scrubber) {
        const past = this.pastPieces(this.scrubber.cutPoint(this.pending.slice(0, at + keep), at), keep);
        if (past === null) return; // more of the line is needed to know where to cut it
        at = past;
      }
      const piece = this.pending.slice(0, at);
      this.pending = this.pending.slice(at);
      this.show(this.scrubbed(piece) + CUT_MARK);
    }
  }

  /**
   * `at`, a cut that splits no form, or the first such cut after it that splits no stretch of
   * pieces of a value either (scrubbed on either side of a cut, its parts could each be shorter
   * than PIECE). Each cut tried is a cutPoint with `keep` characters after it, as cutLong's is;
   * null when the text held does not reach that far: the cut waits for more of the line. A stretch
   * of pieces that runs on past twice `keep` (the text a value alone can fill) is cut there
   * anyway, which bounds what is held.
   */
  private pastPieces(at: number, keep: number): number | null {
    const scrubber = this.scrubber!;
    while (this.piecesAcross(at)) {
      // the first place past the stretch (cheap: a few characters are looked at), then the first
      // cut there that splits no form (which reads the whole text held: once per stretch)
      let next = at + 1;
      while (next < this.pending.length && (this.piecesAcross(next) || splitsPair(this.pending, next)))
        next++;
      if (next + keep > this.pending.length)
        return this.pending.length > this.maxLine + 2 * keep + PIECE ? at : null;
      at = scrubber.cutPoint(this.pending.slice(0, next + keep), next);
    }
    return at;
  }

  /** Whether a stretch of PIECE characters that scrubPieces replaces runs across `at`, as shown. */
  private piecesAcross(at: number): boolean {
    if (at <= 0 || at >= this.pending.length) return false;
    const before = visibleControls(this.pending.slice(Math.max(0, at - PIECE), at)).slice(1 - PIECE);
    const after = visibleControls(this.pending.slice(at, at + PIECE)).slice(0, PIECE - 1);
    const around = before + after;
    for (let i = 0; i < before.length && i + PIECE <= around.length; i++) {
      const w = around.slice(i, i + PIECE);
      if (this.scrubber!.scrubPieces(w) !== w) return true;
    }
    return false;
  }

  private finish(): void {
    const line = this.pending;
    this.pending = "";
    this.show(this.scrubbed(line));
  }

  private scrubbed(text: string): string {
    const visible = visibleControls(text);
    return this.scrubber ? this.scrubber.scrubPieces(this.scrubber.scrubText(visible)) : visible;
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
