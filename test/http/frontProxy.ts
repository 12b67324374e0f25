// An HTTP front (reverse proxy) before a Streamable HTTP server, as deployments put one: it
// passes every request to the upstream on 127.0.0.1:upstreamPort, and answers 502 itself when
// the upstream cannot be reached (so a restarting server shows the client a 502, not a refused
// connection). It counts what it answered, by method and status, for tests to wait on.
import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";

export interface FrontProxy {
  url: string;
  /** how many responses of `method` with `status` it sent */
  count(method: string, status: number): number;
  /** from now on, answers GETs as `o` says */
  set(o: FrontOptions): void;
  /** ends every open GET stream cleanly (as a front pruning idle streams does) */
  endStreams(): void;
  close(): Promise<void>;
}

export interface FrontOptions {
  /** answer every GET with this status itself (405: the front offers no server-to-client stream) */
  getStatus?: number;
  /** answer every POST with this status itself (502: the server behind it cannot be reached) */
  postStatus?: number;
  /** answer every POST with a 307 redirect to this location */
  postRedirect?: string;
}

export function startFront(upstreamPort: number, o: FrontOptions = {}): Promise<FrontProxy> {
  const counts = new Map<string, number>();
  let opts = o;
  /** open GET streams: the front's response, and the upstream's it passes on */
  const streams = new Map<ServerResponse, IncomingMessage>();
  const counted = (method: string, status: number) => {
    const key = `${method} ${status}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  };
  const server = createServer((req, res) => {
    const method = req.method ?? "GET";
    if (method === "GET" && opts.getStatus !== undefined) {
      counted(method, opts.getStatus);
      res.writeHead(opts.getStatus).end();
      return;
    }
    if (method === "POST" && opts.postRedirect !== undefined) {
      counted(method, 307);
      req.resume();
      res.writeHead(307, { location: opts.postRedirect }).end();
      return;
    }
    if (method === "POST" && opts.postStatus !== undefined) {
      counted(method, opts.postStatus);
      req.resume();
      res.writeHead(opts.postStatus, { "content-type": "text/plain" }).end("bad gateway");
      return;
    }
    const up = request(
      {
        host: "127.0.0.1",
        port: upstreamPort,
        method,
        path: req.url,
        headers: { ...req.headers, host: `127.0.0.1:${upstreamPort}` },
      },
      (upRes) => {
        counted(method, upRes.statusCode ?? 0);
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        if (method === "GET") {
          streams.set(res, upRes);
          res.on("close", () => streams.delete(res));
        }
        upRes.pipe(res);
        // the upstream went away mid-stream: so does the front's response
        upRes.on("close", () => {
          if (!res.writableEnded) res.destroy();
        });
      },
    );
    up.on("error", (e) => {
      if (res.headersSent) return void res.destroy();
      counted(method, 502);
      res.writeHead(502, { "content-type": "text/plain" }).end(`bad gateway: ${e.message}`);
    });
    req.pipe(up);
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      resolve({
        url: `http://127.0.0.1:${port}/mcp`,
        count: (method, status) => counts.get(`${method} ${status}`) ?? 0,
        set: (next) => {
          opts = next;
        },
        endStreams: () => {
          for (const [res, upRes] of streams) {
            upRes.unpipe(res);
            upRes.destroy();
            res.end();
          }
        },
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}
