import { StringDecoder } from "node:string_decoder";

/** One server-sent event (https://html.spec.whatwg.org/multipage/server-sent-events.html). */
export interface SseEvent {
  event: string;
  data: string;
  id: string | null;
}

/**
 * A minimal text/event-stream reader: enough for Streamable HTTP, where each `message` event's
 * data is one JSON-RPC message. An event whose data grows over `maxBytes` is not kept: `oversize`
 * is told its size once, and the rest of it is dropped, so a server cannot make the gateway
 * buffer without bound.
 *
 * Each chunk is looked at once: only the newly decoded text is scanned for line ends, and an
 * unfinished line is kept as pieces joined when it ends. (Appending to one buffer and scanning
 * it again on every chunk costs time in the square of a line's length: one large answer sent as
 * one event would stall the gateway for every other call.)
 */
export class SseReader {
  private readonly decoder = new StringDecoder("utf8");
  /** the unfinished line, in pieces, and its length so far */
  private pending: string[] = [];
  private pendingLength = 0;
  /** the unfinished line went over the limit: its text is no longer kept, only counted */
  private pendingDropped = false;
  /** the last chunk ended with \r: a \n opening the next one belongs to that line end */
  private afterCr = false;
  private data: string[] = [];
  private dataBytes = 0;
  private dropped = 0;
  private event = "";
  private id: string | null = null;

  /**
   * A longer line is dropped data, whatever its field, however it was cut into chunks: room for
   * a "data: " field name before a value of `maxBytes`, so the limit on a line never drops an
   * event the limit on its data would keep.
   */
  private readonly maxLine: number;

  constructor(
    private readonly onEvent: (e: SseEvent) => void,
    private readonly onOversize: (bytes: number) => void,
    private readonly maxBytes: number,
  ) {
    this.maxLine = maxBytes + "data: ".length;
  }

  push(chunk: Buffer): void {
    this.scan(this.decoder.write(chunk));
  }

  end(): void {
    this.scan(this.decoder.end());
    if (this.pendingLength > 0) this.endLine("");
    // an event not terminated by a blank line is not dispatched (as the standard says)
  }

  /** Splits new text at CRLF, LF or CR, looking at each character once. */
  private scan(text: string): void {
    if (text === "") return;
    let from = 0;
    if (this.afterCr && text.charCodeAt(0) === 0x0a) from = 1;
    this.afterCr = false;
    const ends = /\r\n|\r|\n/g;
    ends.lastIndex = from;
    for (let m = ends.exec(text); m !== null; m = ends.exec(text)) {
      this.endLine(text.slice(from, m.index));
      from = m.index + m[0].length;
      // a \r as the very last character may be the first half of a \r\n split across chunks
      if (m[0] === "\r" && from === text.length) this.afterCr = true;
    }
    if (from < text.length) this.keep(text.slice(from));
  }

  /** Part of a line whose end has not come yet. */
  private keep(piece: string): void {
    this.pendingLength += piece.length;
    if (this.pendingDropped) return;
    if (this.pendingLength > this.maxLine) {
      // one line with no end in sight: from here it is only counted, as dropped data
      this.pendingDropped = true;
      this.pending = [];
      return;
    }
    this.pending.push(piece);
  }

  private endLine(last: string): void {
    if (this.pendingLength === 0 && last.length <= this.maxLine) {
      this.line(last);
      return;
    }
    const length = this.pendingLength + last.length;
    const dropped = this.pendingDropped || length > this.maxLine;
    const text = dropped ? "" : this.pending.join("") + last;
    this.pending = [];
    this.pendingLength = 0;
    this.pendingDropped = false;
    if (dropped) {
      this.dropped += this.dataBytes + length;
      this.data = [];
      this.dataBytes = 0;
      return;
    }
    this.line(text);
  }

  private line(line: string): void {
    if (line === "") {
      this.dispatch();
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        if (this.dropped > 0 || this.dataBytes + value.length > this.maxBytes) {
          this.dropped += this.dataBytes + value.length;
          this.data = [];
          this.dataBytes = 0;
          return;
        }
        this.data.push(value);
        this.dataBytes += value.length + 1;
        return;
      case "event":
        this.event = value;
        return;
      case "id":
        if (!value.includes("\0")) this.id = value;
        return;
      default:
        return; // retry and unknown fields
    }
  }

  private dispatch(): void {
    const dropped = this.dropped;
    const data = this.data.join("\n");
    const had = this.data.length > 0;
    const event = this.event || "message";
    this.data = [];
    this.dataBytes = 0;
    this.dropped = 0;
    this.event = "";
    if (dropped > 0) {
      this.onOversize(dropped);
      return;
    }
    // An event whose data is empty is not dispatched, as the standard says: a 2025-11-25 server
    // primes each stream with one (an `id:` and an empty `data:`) so a client could resume it.
    if (had && data !== "") this.onEvent({ event, data, id: this.id });
  }
}
