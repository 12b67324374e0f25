// A reverse proxy on this machine in front of `run --listen`, as a dev server's proxy with "change
// origin" is: it rewrites Host (and Origin, when one is sent) to the front's own and appends its
// X-Forwarded-Host and X-Forwarded-For after the headers it was sent. A rebound page's request
// passed on by it carries an allowed Host; only the forwarding headers say where it came from,
// which is what the tests of the front's refusal of them need. The proxy itself takes every header
// it is sent (a 64 KiB head, node's 2000-header count off): a proxy that dropped some would hide
// nothing from the front.
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import type { Cleanup } from "./teardown.js";

/** Starts the proxy to the front at 127.0.0.1:`frontPort`; resolves with its port, its close on `cleanup`. */
export async function forwardingProxy(frontPort: number, cleanup: Cleanup): Promise<number> {
  const target = `127.0.0.1:${frontPort}`;
  const server = createServer({ maxHeaderSize: 64 * 1024 }, (req, res) => {
    const headers = { ...req.headers };
    headers["x-forwarded-host"] = req.headers.host ?? "";
    headers["x-forwarded-for"] = req.socket.remoteAddress ?? "";
    headers.host = target;
    if (headers.origin) headers.origin = `http://${target}`;
    const up = request(
      { host: "127.0.0.1", port: frontPort, path: req.url, method: req.method, headers, setHost: false },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on("error", () => res.writeHead(502).end());
    req.pipe(up);
  });
  server.maxHeadersCount = 0;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  cleanup.push(() => new Promise<void>((r) => server.close(() => r())));
  return (server.address() as AddressInfo).port;
}
