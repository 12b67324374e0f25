// The proxy reads on past a request body write that an upstream refused by resetting its
// connection (refusedWrites.ts), through a socket's private `_write`, which Node's internals may
// change: it is used only where a feature test at the proxy's start proves it works. A real
// gateway, preloaded with a Node whose sockets destroy themselves on a failed write before its
// callback hears of it (test/fixtures/refused-writes-differ.cjs), says at start that the answer
// written before such a reset is not given on; an upload answered with a 413 and a reset then gets
// an answer all the same, never a wait: the 413 where Node read it before the write that met the
// reset, the proxy's 502 where that write came first (as before the way existed), and the gateway
// serves the next request. Before, the way was used without a test: a Node on which
// it did not work was not told of, and one on which it misbehaved would have been trusted.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import { exchange, type Gw } from "./egress-kit.js";
import { preloadedProxy } from "./egress-preloaded-proxy.js";

const BODY = 1024 * 1024;

/** /upload: the head read, 413, closed with the body unread (a reset); any other path: a 200 naming it. */
function serve(req: IncomingMessage, res: ServerResponse) {
  if (req.url !== "/upload") {
    res.end(req.url);
    return;
  }
  const socket = req.socket;
  socket.pause();
  res.writeHead(413, { "content-length": 8, connection: "close" });
  res.end("too long", () => socket.destroy());
}

const upstream = createServer(serve);
let host: string;
let gw: Gw;
let port: number;

beforeAll(async () => {
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  host = `127.0.0.1:${(upstream.address() as { port: number }).port}`;
  ({ gw, port } = await preloadedProxy("refused-writes-differ.cjs", "portcullis-refused-writes-"));
}, 30_000);

afterAll(async () => {
  await gw?.close();
  upstream.closeAllConnections();
  upstream.close();
});

it("the proxy says at start that an answer written before a reset is not given on", async () => {
  await gw.waitForStderr(/cannot read on past a request body write an upstream refused/);
});

it("an upload answered and reset gets an answer, the 413 or the proxy's 502, and the gateway serves on", async () => {
  const upload = await exchange(
    port,
    `POST http://${host}/upload HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${BODY}\r\nConnection: close\r\n\r\n${"a".repeat(BODY)}`,
  );
  expect(upload).toMatch(
    /^HTTP\/1\.1 (?:413 [^\r]*\r\n[\s\S]*\r\n\r\ntoo long|502 Bad Gateway\r\n[\s\S]*portcullis egress: [^\n]*\n)$/,
  );
  const next = await exchange(
    port,
    `GET http://${host}/next HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
  );
  expect(next).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n\/next$/);
  await gw.client.listTools();
});
