// The start of the tests of resumption on `run --listen`: a session whose call waits for a human,
// and a client whose connection drops in the middle of that call's SSE stream (its answer comes
// later; the client is gone before it and comes back with GET + Last-Event-ID). The request's own
// socket is destroyed once the first whole event has arrived, so what the stream sends after it
// is owed to the session, not read here.
import { request } from "node:http";
import { type Listener, startListener } from "../http/listen.js";
import { openSession, raw } from "../http/raw.js";
import { fixtureCommand } from "./paths.js";
import type { Cleanup } from "./teardown.js";

/**
 * `run --listen` before the echo fixture, a call held 30 s for a human, with a session open on it
 * whose catalog was listed; the front's close goes on `cleanup`.
 */
export async function sessionAwaitingApproval(cleanup: Cleanup): Promise<{ l: Listener; session: string }> {
  const l = await startListener(fixtureCommand("echo"), { args: ["--approval-timeout", "30000"] });
  cleanup.push(() => l.close());
  const session = await openSession(l);
  await raw(l, {
    headers: l.headers({ "mcp-session-id": session }),
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  return { l, session };
}

/** The `run --listen` front: its port, and its request headers (token, Accept) with `extra`. */
interface Front {
  port: number;
  headers(extra?: Record<string, string>): Record<string, string>;
}

/**
 * POSTs `body` in `session`, resolves with the first SSE event's id and data and the answer's
 * content type, and drops the connection.
 */
export function firstEventThenDrop(
  front: Front,
  session: string,
  body: string,
): Promise<{ id: string; data: string; contentType: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: front.port,
        path: "/mcp",
        method: "POST",
        headers: front.headers({ "mcp-session-id": session }),
      },
      (res) => {
        let buf = "";
        res.setEncoding("utf8");
        res.on("data", (c) => {
          buf += c;
          const m = /id: (\S+)\nevent: message\ndata: (.*)\n\n/.exec(buf);
          if (m) {
            req.destroy(); // the connection drops mid-stream
            resolve({ id: m[1]!, data: m[2]!, contentType: res.headers["content-type"] });
          }
        });
      },
    );
    req.on("error", (e) => {
      if ((e as NodeJS.ErrnoException).code !== "ECONNRESET") reject(e);
    });
    req.end(body);
  });
}
