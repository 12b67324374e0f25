import { TopLevelIdScanner } from "./idScan.js";

/**
 * Newline-delimited JSON-RPC framing for stdio, with a hard size limit.
 *
 * A line's pieces are kept as the chunks they arrived in and joined once, so a
 * big line costs linear time and about twice its size at the end. A line longer
 * than `maxBytes` is never buffered whole: the reader drops bytes until the next
 * newline and reports one `oversize` event with the raw text of the message's
 * top-level id (found by scanning the bytes as they pass), so its sender can
 * still be answered, and a hostile or broken peer cannot make the gateway grow
 * without bound.
 */
export interface FramingEvents {
  line(text: string): void;
  /**
   * `id`: the raw JSON text of the dropped message's top-level id, or null when it had none;
   * `hasMethod`: it had a top-level "method" (a request or notification, not a response)
   */
  oversize(bytes: number, id: string | null, hasMethod: boolean): void;
}

/** 64 MiB: big tool results (files, images) pass; a runaway peer does not exhaust memory. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export class LineReader {
  private chunks: Buffer[] = [];
  private size = 0;
  private dropping = 0; // > 0 while discarding the rest of an oversized line
  private scanner: TopLevelIdScanner | null = null;

  constructor(
    private readonly events: FramingEvents,
    private readonly maxBytes = DEFAULT_MAX_MESSAGE_BYTES,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(10, start);
      // A whole line of this chunk, nothing kept before it (nearly every message): read in place,
      // with no piece cut out of the chunk nor a list of pieces made for it.
      if (nl !== -1 && this.size === 0 && this.dropping === 0 && nl - start <= this.maxBytes) {
        // (UTF-8: no encoding named, Buffer's shortest way to it)
        this.lineRead(chunk.toString(undefined, start, nl));
        start = nl + 1;
        continue;
      }
      const end = nl === -1 ? chunk.length : nl;
      const piece = chunk.subarray(start, end);
      if (this.dropping > 0) {
        this.dropping += piece.length;
        if (!this.scanner!.finished) this.scanner!.push(piece);
      } else if (this.size + piece.length > this.maxBytes) {
        this.dropping = this.size + piece.length;
        this.scanner = new TopLevelIdScanner(true);
        for (const c of this.chunks) this.scanner.push(c);
        this.scanner.push(piece);
        this.chunks = [];
        this.size = 0;
      } else if (piece.length > 0) {
        this.chunks.push(piece);
        this.size += piece.length;
      }
      if (nl === -1) break;
      this.finishLine();
      start = nl + 1;
    }
  }

  /** Flushes a last line that had no trailing newline (peer closed). */
  end(): void {
    if (this.size > 0 || this.dropping > 0) this.finishLine();
  }

  private finishLine(): void {
    if (this.dropping > 0) {
      const n = this.dropping;
      const id = this.scanner?.id ?? null;
      const hasMethod = this.scanner?.hasMethod ?? false;
      this.dropping = 0;
      this.scanner = null;
      this.events.oversize(n, id, hasMethod);
      return;
    }
    const text = (
      this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size)
    ).toString("utf8");
    this.chunks = [];
    this.size = 0;
    this.lineRead(text);
  }

  private lineRead(text: string): void {
    const trimmed = text.endsWith("\r") ? text.slice(0, -1) : text;
    if (trimmed.trim().length > 0) this.events.line(trimmed);
  }
}
