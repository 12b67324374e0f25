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
 */
export class SseReader {
  private readonly decoder = new StringDecoder("utf8");
  private buf = "";
  private data: string[] = [];
  private dataBytes = 0;
  private dropped = 0;
  private event = "";
  private id: string | null = null;

  constructor(
    private readonly onEvent: (e: SseEvent) => void,
    private readonly onOversize: (bytes: number) => void,
    private readonly maxBytes: number,
  ) {}

  push(chunk: Buffer): void {
    this.buf += this.decoder.write(chunk);
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      if (!m) break;
      // a lone \r at the very end may be the first half of \r\n: wait for more
      if (m[0] === "\r" && m.index === this.buf.length - 1) break;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      this.line(line);
    }
    if (this.buf.length > this.maxBytes) {
      // one line with no end in sight: count it as dropped data
      this.dropped += this.buf.length;
      this.buf = "";
    }
  }

  end(): void {
    this.buf += this.decoder.end();
    if (this.buf) this.line(this.buf);
    this.buf = "";
    // an event not terminated by a blank line is not dispatched (as the standard says)
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
    if (had) this.onEvent({ event, data, id: this.id });
  }
}
