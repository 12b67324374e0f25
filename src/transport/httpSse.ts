import type { ServerResponse } from "node:http";

/**
 * One SSE stream of a session, kept in memory so that a client whose connection dropped can
 * resume it with `Last-Event-ID`. Event ids are `<stream>.<seq>`: the stream is found from the
 * id alone. Events are kept until the session ends (bounded per stream); a stream's connection
 * is replaceable: a resuming GET attaches a new response and gets what it has not seen.
 */
export class SseStream {
  private readonly events: { seq: number; data: string }[] = [];
  private seq = 0;
  private res: ServerResponse | null = null;
  private finished = false;
  private written = 0;

  constructor(
    readonly id: string,
    /** events kept for resumption; older ones are forgotten */
    private readonly keep = 1024,
  ) {}

  get done(): boolean {
    return this.finished;
  }

  /** the last event written to a connection (a new GET without Last-Event-ID continues after it) */
  get delivered(): number {
    return this.written;
  }

  get attached(): boolean {
    return this.res !== null;
  }

  /** Sends the SSE headers on `res` and delivers every event after `afterSeq`. */
  attach(res: ServerResponse, afterSeq: number): void {
    if (this.res && this.res !== res) this.res.end();
    this.res = res;
    if (!res.headersSent) {
      res.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-cache, no-transform",
        connection: "keep-alive",
      });
      res.flushHeaders();
    }
    res.once("close", () => {
      if (this.res === res) this.res = null;
    });
    for (const e of this.events) if (e.seq > afterSeq) this.writeEvent(e);
    if (this.finished) this.endResponse();
  }

  /** Queues one JSON-RPC message and writes it when a connection is attached. */
  write(message: string): void {
    if (this.finished) return;
    const e = { seq: ++this.seq, data: message };
    this.events.push(e);
    if (this.events.length > this.keep) this.events.shift();
    if (this.res) this.writeEvent(e);
  }

  /** No more events: the attached connection ends once it has them. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.res) this.endResponse();
  }

  /** Drops the connection now (session end), without marking the stream finished. */
  detach(): void {
    if (this.res) this.endResponse();
  }

  private endResponse(): void {
    const res = this.res;
    this.res = null;
    res?.end();
  }

  private writeEvent(e: { seq: number; data: string }): void {
    // data has no newline: it is one JSON text as JSON.stringify writes it
    if (!this.res) return;
    this.written = Math.max(this.written, e.seq);
    this.res.write(`id: ${this.id}.${e.seq}\nevent: message\ndata: ${e.data}\n\n`);
  }
}

/** Splits a `Last-Event-ID` into the stream id and the sequence number, or null. */
export function parseEventId(text: string | undefined): { stream: string; seq: number } | null {
  const m = /^([A-Za-z0-9_-]+)\.([0-9]+)$/.exec(text ?? "");
  return m ? { stream: m[1]!, seq: Number(m[2]) } : null;
}
