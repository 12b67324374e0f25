// An interim answer (1xx) in absolute form is written again by the proxy through a way Node offers
// (its internal `_writeRaw` on Node 20 to 25: no public method writes any 1xx with any headers
// before Node 26's `writeInformation`). On a Node where that way no longer works, found by a
// feature test as the proxy starts, interim answers are dropped and the final answer is given on:
// a real gateway, preloaded with a Node whose ways to write an interim head throw
// (test/fixtures/interim-refused.cjs), says so on stderr at start, and an upstream's 102 and 103
// before its 200 reach the client as the 200 alone, the gateway serving on. Before, the proxy
// called the internal method from Node's client's 'information' event, where the throw was an
// uncaught exception: the gateway ended, the client got no answer.
import { createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { exchange, type Gw } from "./egress-kit.js";
import { preloadedProxy } from "./egress-preloaded-proxy.js";

let upstream: Server;
let host: string;
const sockets = new Set<Socket>();
let gw: Gw;
let port: number;

beforeAll(async () => {
  // each request: 102, then 103 with a Link, then the 200 naming its path
  upstream = createServer((s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
    let buf = "";
    s.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      for (let end = buf.indexOf("\r\n\r\n"); end >= 0; end = buf.indexOf("\r\n\r\n")) {
        const path = /^\S+ (\S+)/.exec(buf)?.[1] ?? "/";
        buf = buf.slice(end + 4);
        s.write(
          "HTTP/1.1 102 Processing\r\n\r\n" +
            "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n" +
            `HTTP/1.1 200 OK\r\nContent-Length: ${path.length}\r\n\r\n${path}`,
        );
      }
    });
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  host = `127.0.0.1:${(upstream.address() as { port: number }).port}`;
  ({ gw, port } = await preloadedProxy("interim-refused.cjs", "portcullis-interim-"));
}, 30_000);

afterAll(async () => {
  await gw?.close();
  for (const s of sockets) s.destroy();
  upstream?.close();
});

const get = (path: string) =>
  exchange(port, `GET http://${host}${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);

it("the proxy says at start that interim answers are not given on", async () => {
  await gw.waitForStderr(/no way the proxy can use to write an interim answer \(1xx\)/);
});

it("an upstream's 102 and 103 are dropped, its 200 given on, and the gateway serves on", async () => {
  const first = await get("/first");
  expect(first).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  expect(first).toMatch(/\r\n\r\n\/first$/);
  expect(first).not.toMatch(/HTTP\/1\.1 10[23]/);
  expect(first).not.toContain("style.css");
  // the same gateway, still there: a second request, and its client's
  expect(await get("/second")).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n\/second$/);
  await gw.client.listTools();
});
