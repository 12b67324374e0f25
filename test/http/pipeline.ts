// One HTTP/1.1 connection held by the test, for what depends on which connection a message came
// on: every POST goes on this very socket, and a POST may be written before the answer to the
// previous one came (pipelining: the answers then come in the order the requests were sent).
// node:http's client picks sockets itself and never pipelines, so this writes and reads the bytes.
import { connect, type Socket } from "node:net";
import { modernMeta } from "../helpers/modernMeta.js";
import type { Listener } from "./listen.js";
import type { RawResponse } from "./raw.js";

interface Waiting {
  resolve(r: RawResponse): void;
  reject(e: Error): void;
}

export class Connection {
  private buffer = Buffer.alloc(0);
  private readonly waiting: Waiting[] = [];
  private gone: Error | null = null;

  private constructor(
    private readonly l: Listener,
    private readonly socket: Socket,
  ) {
    socket.on("data", (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.parse();
    });
    socket.on("error", (e) => this.fail(e));
    socket.on("close", () => this.fail(new Error("the connection closed")));
  }

  static open(l: Listener): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = connect(l.port, "127.0.0.1", () => resolve(new Connection(l, socket)));
      socket.once("error", reject);
    });
  }

  /**
   * POSTs `body` to /mcp on this connection (with `extra` headers: a legacy session's
   * Mcp-Session-Id); its answer, whenever the ones before it came.
   */
  post(body: unknown, extra: Record<string, string> = {}): Promise<RawResponse> {
    if (this.gone) return Promise.reject(this.gone);
    const text = Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
    const headers = {
      ...this.l.headers(extra),
      host: `127.0.0.1:${this.l.port}`,
      "content-length": String(text.length),
    };
    const head = Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("");
    const answer = new Promise<RawResponse>((resolve, reject) => this.waiting.push({ resolve, reject }));
    this.socket.write(Buffer.concat([Buffer.from(`POST /mcp HTTP/1.1\r\n${head}\r\n`), text]));
    return answer;
  }

  /** Ends the connection; answers still awaited are no longer wanted (the test is over). */
  close(): void {
    this.waiting.splice(0);
    this.socket.destroy();
  }

  private fail(e: Error): void {
    this.gone ??= e;
    for (const w of this.waiting.splice(0)) w.reject(e);
  }

  /** Takes every whole response off the buffer, in order. */
  private parse(): void {
    for (;;) {
      const end = this.buffer.indexOf("\r\n\r\n");
      if (end === -1) return;
      const [statusLine, ...lines] = this.buffer.subarray(0, end).toString("latin1").split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const body = bodyOf(this.buffer.subarray(end + 4), headers);
      if (body === null) return; // not all of it yet
      this.buffer = this.buffer.subarray(end + 4 + body.length);
      const status = Number(statusLine!.split(" ")[1]);
      this.waiting.shift()?.resolve({ status, headers, body: body.text });
    }
  }
}

/** The body at the start of `rest` and how many bytes it took, or null when it is not all here. */
function bodyOf(rest: Buffer, headers: Record<string, string>): { text: string; length: number } | null {
  if (headers["transfer-encoding"]?.toLowerCase() === "chunked") {
    let at = 0;
    let text = "";
    for (;;) {
      const eol = rest.indexOf("\r\n", at);
      if (eol === -1) return null;
      const size = Number.parseInt(rest.subarray(at, eol).toString("latin1"), 16);
      if (rest.length < eol + 2 + size + 2) return null;
      text += rest.subarray(eol + 2, eol + 2 + size).toString("utf8");
      at = eol + 2 + size + 2;
      if (size === 0) return { text, length: at };
    }
  }
  const length = Number(headers["content-length"] ?? 0);
  if (rest.length < length) return null;
  return { text: rest.subarray(0, length).toString("utf8"), length };
}

/** The envelope a 2026-07-28 client named `client` puts in every request's `_meta`. */
export function modernEnvelope(client: string): Record<string, unknown> {
  return modernMeta({}, { name: client, version: "1" });
}

/** Requests of a 2026-07-28 client named `client`, each with the envelope in `_meta`. */
export function modernRequester(client: string) {
  const envelope = modernEnvelope(client);
  return (id: number, method: string, params: Record<string, unknown> = {}) => ({
    jsonrpc: "2.0",
    id,
    method,
    params: { ...params, _meta: envelope },
  });
}
