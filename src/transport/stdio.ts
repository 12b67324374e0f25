import type { Downstream } from "../gateway/downstream.js";
import { ClientIds } from "../relay/clientIds.js";
import { LineCoalescer, writesAfterRead } from "../relay/coalesce.js";
import { LineReader } from "../relay/framing.js";

/**
 * The downstream adapter: MCP over this process's stdin/stdout. stdout carries
 * protocol messages only. The client's ids are written back byte-exact
 * (`ClientIds`).
 */
export function stdioDownstream(
  handlers: {
    line(text: string): void;
    oversize(bytes: number, id: string | null, hasMethod: boolean): void;
    /** `input-closed`: the client ended stdin (it may still read answers); `output-closed`: it is gone */
    end(why: "input-closed" | "output-closed"): void;
    /**
     * false: more than BACKLOG_BYTES wait to be written to the client (it reads slower than the
     * gateway is given messages for it); true: all of it was written (ServerLink.setReading)
     */
    flow?(reading: boolean): void;
  },
  maxBytes?: number,
): Downstream & { stopReading(): void } {
  const reader = new LineReader({ line: handlers.line, oversize: handlers.oversize }, maxBytes);
  const clientIds = new ClientIds();
  let closed = false;
  // one write per event-loop turn: stdout to a pipe is a synchronous syscall per write
  const out = new LineCoalescer(process.stdout);
  // the lines a chunk carries are relayed as it is read (coalesce.ts)
  process.stdin.on(
    "data",
    writesAfterRead((b) => reader.push(b)),
  );
  process.stdin.on("end", () => {
    reader.end();
    handlers.end("input-closed");
  });
  process.stdin.on("error", () => handlers.end("output-closed"));
  process.stdout.on("error", () => {
    // EPIPE: the client went away
    closed = true;
    out.discard();
    handlers.end("output-closed");
  });
  // What waits for the client is seen once it was handed to stdout (one turn late, which only
  // lets one more turn's messages in): past BACKLOG_BYTES the server is no longer read, until
  // stdout drains. (A file or a terminal is written synchronously and never backs up.)
  let backedUp = false;
  const watchBacklog = () => {
    if (backedUp || closed || process.stdout.writableLength < BACKLOG_BYTES) return;
    backedUp = true;
    handlers.flow?.(false);
    process.stdout.once("drain", () => {
      backedUp = false;
      if (!closed) handlers.flow?.(true);
    });
  };
  return {
    clientIds,
    send(msg: unknown) {
      if (closed) return;
      out.write(clientIds.restore(JSON.stringify(msg)));
      watchBacklog();
    },
    sendText(text: string) {
      if (closed) return;
      out.write(text);
      watchBacklog();
    },
    /** No more requests are read; answers still go out until close(). */
    stopReading() {
      process.stdin.pause();
    },
    close() {
      if (closed) return;
      out.flush(); // what was sent before the close still goes out
      closed = true;
      process.stdin.pause();
    },
  };
}

/**
 * How much may wait to be written to the client before the server is no longer read
 * (`flow`): enough that a burst never stops it, little beside what a message may hold.
 */
export const BACKLOG_BYTES = 4 * 1024 * 1024;
