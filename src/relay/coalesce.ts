/**
 * Write coalescing for newline-delimited messages: every line written during one
 * turn of the event loop (one callback and the microtasks it starts) goes out in
 * a single `write` when that turn ends, so a burst of messages costs one syscall
 * instead of one each. Order is kept; nothing is written after `end`. The lines
 * written while a chunk read from a pipe is handled go out as that handling returns
 * (`writesAfterRead`), each writer's in one write as well.
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
      if (inRead) writtenInRead.push(this);
      else process.nextTick(this.onTick);
    }
  }

  /** The read callback that wrote lines here returned (`writesAfterRead`): they go out now. */
  endOfRead(): void {
    this.scheduled = false;
    this.flush();
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

/** Whether a read callback is running (`writesAfterRead`), and the writers given lines during it. */
let inRead = false;
const writtenInRead: LineCoalescer[] = [];

/**
 * `onData` as a stream's `data` listener whose lines written meanwhile (to any coalescer: a
 * relayed request goes to the server, an answer to the client) go out as it returns, each
 * coalescer's in one write: the lines a read's chunk carries are written as the turn's end would
 * write them, without a tick scheduled for each writer (a relayed message's commonest path).
 * Lines written after it in the turn (promise continuations) go out at the turn's end, as ever.
 */
export function writesAfterRead(onData: (chunk: Buffer) => void): (chunk: Buffer) => void {
  return (chunk) => {
    if (inRead) {
      onData(chunk); // (a read inside a read: its lines go out with the outer one's)
      return;
    }
    inRead = true;
    try {
      onData(chunk);
    } finally {
      inRead = false;
      for (let i = 0; i < writtenInRead.length; i++) writtenInRead[i]!.endOfRead();
      writtenInRead.length = 0;
    }
  };
}
