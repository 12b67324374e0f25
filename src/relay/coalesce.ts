/**
 * Write coalescing for newline-delimited messages: every line written during one
 * turn of the event loop (one callback and the microtasks it starts) goes out in
 * a single `write` when that turn ends, so a burst of messages costs one syscall
 * instead of one each. Order is kept; nothing is written after `end`.
 *
 * `flush()` writes what is pending now: call it before ending the stream or
 * before anything that must come after the pending lines.
 */
export class LineCoalescer {
  private pending = "";
  private scheduled = false;
  private readonly onTick = () => {
    this.scheduled = false;
    this.flush();
  };

  constructor(
    private readonly stream: NodeJS.WritableStream & { destroyed?: boolean; writableEnded?: boolean },
  ) {}

  /** Queues one message (its text, without the newline). */
  write(text: string): void {
    this.pending += `${text}\n`;
    if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.onTick);
    }
  }

  flush(): void {
    if (this.pending === "") return;
    const out = this.pending;
    this.pending = "";
    if (this.stream.destroyed || this.stream.writableEnded) return;
    this.stream.write(out);
  }

  /** How much is queued for the next write (UTF-16 code units: about its bytes). */
  get pendingLength(): number {
    return this.pending.length;
  }

  /** Drops what is pending (the peer is gone). */
  discard(): void {
    this.pending = "";
  }
}
