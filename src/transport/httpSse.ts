import type { ServerResponse } from "node:http";

/** What a session counts of the events its streams keep for resumption (httpSession.ts). */
export interface KeptEvents {
  /** an event of `bytes` is now kept: its place in the session's order (oldest first) */
  kept(bytes: number): number;
  /** kept events of `bytes` in all are forgotten */
  released(bytes: number): void;
}

interface Kept {
  seq: number;
  data: string;
  bytes: number;
  /** the session-wide order: which stream's oldest event is the session's oldest */
  order: number;
}

/**
 * One SSE stream of a session, kept in memory so that a client whose connection dropped can
 * resume it with `Last-Event-ID`. Event ids are `<stream>.<seq>`: the stream is found from the
 * id alone. What is kept is bounded per stream in events and per session in bytes (the session
 * evicts); a stream's connection is replaceable: a resuming GET attaches a new response and gets
 * what it has not seen (what is still kept of it).
 */
export class SseStream {
  private readonly events: Kept[] = [];
  private seq = 0;
  private res: ServerResponse | null = null;
  private finished = false;
  private written = 0;
  private finalDelivered = false;

  constructor(
    readonly id: string,
    private readonly budget: KeptEvents,
    /** the last event went out whole on a live connection: nothing of this stream is owed */
    private readonly onDelivered: (s: SseStream) => void = () => {},
    /** events kept for resumption; older ones are forgotten */
    private readonly keep = 1024,
  ) {}

  get done(): boolean {
    return this.finished;
  }

  /** finished, and its last event was handed whole to a connection that then ended cleanly */
  get delivered(): boolean {
    return this.finalDelivered;
  }

  /** the last event written to a connection (a new GET without Last-Event-ID continues after it) */
  get lastWritten(): number {
    return this.written;
  }

  get attached(): boolean {
    return this.res !== null;
  }

  /** the connection the stream is written to now, if any (what waits on it is watched: httpSession.ts) */
  get connection(): ServerResponse | null {
    return this.res;
  }

  /** whether `seq` is the number of an event this stream sent (a Last-Event-ID can only be one) */
  issued(seq: number): boolean {
    return seq >= 1 && seq <= this.seq;
  }

  /** the session-wide order of the oldest event still kept, or null when none is */
  get oldest(): number | null {
    return this.events[0]?.order ?? null;
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
    const bytes = Buffer.byteLength(message);
    const e: Kept = { seq: ++this.seq, data: message, bytes, order: this.budget.kept(bytes) };
    this.events.push(e);
    if (this.events.length > this.keep) this.evictOldest();
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

  /** Forgets the oldest kept event: a client resuming before it no longer gets it. */
  evictOldest(): void {
    const e = this.events.shift();
    if (e) this.budget.released(e.bytes);
  }

  /** Forgets every kept event (the stream is dropped). */
  release(): void {
    let bytes = 0;
    for (const e of this.events) bytes += e.bytes;
    this.events.length = 0;
    this.budget.released(bytes);
  }

  private endResponse(): void {
    const res = this.res;
    this.res = null;
    if (!res) return;
    if (this.finished && this.written === this.seq)
      // 'finish': everything was handed to the connection, which did not break first
      res.once("finish", () => {
        this.finalDelivered = true;
        this.onDelivered(this);
      });
    res.end();
  }

  private writeEvent(e: Kept): void {
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
