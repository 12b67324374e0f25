import type { Downstream } from "../gateway/gateway.js";
import { LineReader } from "../relay/framing.js";

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
  process.stdin.on("data", (b: Buffer) => reader.push(b));
  process.stdin.on("end", () => {
    reader.end();
    handlers.end();
  });
  process.stdin.on("error", () => handlers.end());
  process.stdout.on("error", () => {
    // EPIPE: the client went away
    closed = true;
    handlers.end();
  });
  return {
    send(msg: unknown) {
      if (closed) return;
      process.stdout.write(`${JSON.stringify(msg)}\n`);
    },
    close() {
      if (closed) return;
      closed = true;
      process.stdin.pause();
    },
  };
}
