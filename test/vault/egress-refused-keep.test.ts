// A connection to an upstream that had a body write refused (the upstream reset it after
// answering, its answer still read: refusedWrites.ts) is never kept for another request, even
// when the answer said keep-alive. The connection is dead: the next request on it would be written
// into the reset and read nothing but its end ("socket hang up", a 502 from the proxy).
//
// The proxy's own agent setup (http.Agent, keepAlive, readPastRefusedWrites) over real loopback
// sockets, the upstream a raw TCP server the test drives byte by byte. The window in which a kept
// dead connection is handed out lies between the answer's end and the moment the connection's end
// is read, which a client of the proxy cannot hit at will; so the test asks for the next request
// in that window exactly: as the agent frees the connection (its 'free' event, which Node's agent
// hears first, pooling or dropping the connection). Without the guard (`keepSocketAlive`), the
// freed connection was pooled and the next request took it: 'socket hang up'.
import { once } from "node:events";
import * as http from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { readPastRefusedWrites, refusedWriting } from "../../src/vault/egress/refusedWrites.js";
import { within } from "./rawProxyKit.js";

const BOUND = 10_000;
const PART = Buffer.alloc(1024, 0x61);

let upstream: Server;
let port: number;
/** the upstream's connections, in order; the first one answers the upload and is reset by the test */
const connections: Socket[] = [];

beforeAll(async () => {
  upstream = createServer((s) => {
    const n = connections.push(s);
    s.on("error", () => {});
    let got = "";
    const onData = (d: Buffer) => {
      got += d.toString("latin1");
      const end = got.indexOf("\r\n\r\n");
      if (end < 0) return;
      if (n === 1) {
        // the upload's head read, its body not: an answer that keeps the connection, its last
        // bytes held back until the test sends them with the reset
        s.off("data", onData);
        s.pause();
        s.write("HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\n\r\ntoo ");
        return;
      }
      const path = got.split(" ")[1] ?? "/";
      got = got.slice(end + 4);
      s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${path.length}\r\n\r\n${path}`);
    };
    s.on("data", onData);
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  port = (upstream.address() as { port: number }).port;
});

afterAll(() => {
  for (const s of connections) s.destroy();
  upstream?.close();
});

/** The body of an answer to `req`, or the error that ended it. */
async function answer(req: http.ClientRequest): Promise<{ status?: number; body?: string; error?: string }> {
  return new Promise((resolve) => {
    req.on("error", (e) => resolve({ error: e.message }));
    req.on("response", (res) => {
      let body = "";
      res.on("data", (d: Buffer) => {
        body += d.toString("latin1");
      });
      res.on("end", () => resolve({ status: res.statusCode, body }));
    });
  });
}

it("a connection whose body write the upstream refused is not kept: the next request gets a new one", async () => {
  // (the proxy's feature test finds the way working on this Node, as the proxy needs it to)
  expect(await refusedWriting()).toEqual({ works: true, tls: true });
  const agent = new http.Agent({ keepAlive: true });
  readPastRefusedWrites(agent);
  try {
    const upload = http.request({
      agent,
      host: "127.0.0.1",
      port,
      method: "POST",
      path: "/upload",
      headers: { "content-length": 2 * PART.length },
    });
    const uploaded = answer(upload);
    upload.write(PART);
    await once(upload, "response");
    const first = connections[0]!;
    // the answer's last bytes and the upstream's reset, then the body's rest: refused
    first.write("long");
    first.resetAndDestroy();
    upload.end(PART);
    // the next request, asked for as the agent frees the upload's connection
    const next = new Promise<ReturnType<typeof answer>>((resolve) =>
      agent.once("free", () =>
        resolve(answer(http.request({ agent, host: "127.0.0.1", port, path: "/next" }).end())),
      ),
    );
    expect(await within(uploaded, "the upload's answer", BOUND)).toEqual({ status: 413, body: "too long" });
    expect(await within(next, "the next request's answer", BOUND)).toEqual({ status: 200, body: "/next" });
    expect(connections.length).toBe(2);
  } finally {
    agent.destroy();
  }
});
