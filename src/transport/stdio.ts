import type { Downstream } from "../gateway/gateway.js";
import { LineReader } from "../relay/framing.js";
import { LineCoalescer } from "./coalesce.js";

/**
 * The downstream adapter: MCP over this process's stdin/stdout. stdout carries
 * protocol messages only.
 */
export function stdioDownstream(
  handlers: {
    line(text: string): void;
    oversize(bytes: number): void;
    end(): void;
  },
  maxBytes?: number,
): Downstream {
  const reader = new LineReader({ line: handlers.line, oversize: handlers.oversize }, maxBytes);
  let closed = false;
  // one write per event-loop turn: stdout to a pipe is a synchronous syscall per write
  const out = new LineCoalescer(process.stdout);
  process.stdin.on("data", (b: Buffer) => reader.push(b));
  process.stdin.on("end", () => {
    reader.end();
    handlers.end();
  });
  process.stdin.on("error", () => handlers.end());
  process.stdout.on("error", () => {
    // EPIPE: the client went away
    closed = true;
    out.discard();
    handlers.end();
  });
  return {
    send(msg: unknown) {
      if (closed) return;
      out.write(JSON.stringify(msg));
    },
    close() {
      if (closed) return;
      out.flush(); // what was sent before the close still goes out
      closed = true;
      process.stdin.pause();
    },
  };
}
