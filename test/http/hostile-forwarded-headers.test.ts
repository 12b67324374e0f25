// `run --listen` checks `Host` (and `Origin`) against its listen address: DNS rebinding. A reverse
// proxy on this machine that rewrites `Host` to the front's own (a dev server's proxy with
// "change origin") would pass a rebound page's request on with an allowed Host; only its
// `X-Forwarded-Host` / `Forwarded: host=` say where it came from. The front is not meant to sit
// behind a proxy (its client is identified by the connecting socket: behind one, that would be
// the proxy): a request carrying a forwarding header is refused, 403, naming the header.
import { afterEach, describe, expect, it } from "vitest";
import { forwardingProxy } from "../helpers/forwardingProxy.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";
import { expectRpcError, initializeBody, raw } from "./raw.js";

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function listener(): Promise<Listener> {
  const l = await startListener(fixtureCommand("echo"), { args: ["--no-auth"] });
  cleanup.push(() => l.close());
  return l;
}

describe("run --listen and forwarding headers", () => {
  it("a rebound page's initialize through a local reverse proxy is refused (403) and opens no session", async () => {
    const l = await listener();
    const proxyPort = await forwardingProxy(l.port, cleanup);
    const r = await raw(
      { ...l, port: proxyPort },
      {
        headers: l.headers({ host: `evil.test:${proxyPort}`, origin: `http://evil.test:${proxyPort}` }),
        body: initializeBody(),
      },
    );
    expect(r.status, r.body).toBe(403);
    expectRpcError(r, /X-Forwarded-Host.*proxy|proxy.*X-Forwarded-Host/);
    expect(r.headers["mcp-session-id"]).toBeUndefined();
    // the same initialize sent directly is served: the refusal is the proxy's doing
    const direct = await raw(l, { body: initializeBody() });
    expect(direct.status, direct.body).toBe(200);
  });

  it("each forwarding header alone, with the front's own Host, is refused and named, on POST, GET and DELETE", async () => {
    const l = await listener();
    const cases: [string, string][] = [
      ["x-forwarded-host", "evil.test"],
      ["x-forwarded-host", `127.0.0.1:${l.port}`],
      ["forwarded", "host=evil.test"],
      ["forwarded", "for=127.0.0.1"],
      ["x-forwarded-for", "127.0.0.1"],
      ["x-forwarded-proto", "https"],
      ["x-real-ip", "127.0.0.1"],
    ];
    for (const [name, value] of cases) {
      const post = await raw(l, { headers: l.headers({ [name]: value }), body: initializeBody() });
      expect(post.status, `${name}: ${value}`).toBe(403);
      expectRpcError(post, new RegExp(name, "i"));
      expect(post.headers["mcp-session-id"]).toBeUndefined();
      for (const method of ["GET", "DELETE"]) {
        const r = await raw(l, {
          method,
          headers: l.headers({ [name]: value, accept: "text/event-stream", "mcp-session-id": "x" }),
        });
        expect(r.status, `${method} ${name}`).toBe(403);
        expect(r.body.toLowerCase()).toContain(name);
      }
    }
  });
});
