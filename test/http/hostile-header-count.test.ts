// node's HTTP server keeps the first 2000 headers of a request (`maxHeadersCount`) and drops the
// rest without a word, while 2000 short headers fit well inside its 16 KiB head. A sender that
// writes 2000 filler headers first has every later one unseen by the front's checks: a local
// reverse proxy appends its `X-Forwarded-*` after the page's own headers, and a rebound page
// (same-origin to the browser, so free to add headers) pushes them past the count. The front must
// see every header it was sent, or refuse the request.
import { connect } from "node:net";
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

/** `n` headers with distinct three-letter names and empty values: about 7 bytes each on the wire. */
function filler(n: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < n; i++) out[`z${i.toString(36).padStart(3, "0")}`] = "";
  return out;
}

/** One request written byte for byte on its own socket (`connection: close`): the whole answer. */
function rawRequest(port: number, head: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1");
    let got = "";
    s.setEncoding("utf8");
    s.on("data", (c) => {
      got += c;
    });
    s.on("error", reject);
    s.on("close", () => resolve(got));
    // written, not ended: a --no-auth front closes unread a socket already half-closed at accept
    s.write(`${head}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  });
}

describe("run --listen sees every header of a request", () => {
  it("a rebound page that writes 2000 headers first still has the proxy's X-Forwarded-* seen: 403, no session", async () => {
    const l = await listener();
    const proxyPort = await forwardingProxy(l.port, cleanup);
    const r = await raw(
      { ...l, port: proxyPort },
      {
        headers: { ...l.headers({ host: `evil.test:${proxyPort}` }), ...filler(2000) },
        body: initializeBody(),
      },
    );
    expect(r.status, r.body).toBe(403);
    expectRpcError(r, /X-Forwarded-(Host|For)/i);
    expect(r.headers["mcp-session-id"]).toBeUndefined();
    // the same filler sent directly is served: the refusal is for the proxy's headers
    const direct = await raw(l, { headers: { ...l.headers(), ...filler(2000) }, body: initializeBody() });
    expect(direct.status, direct.body).toBe(200);
  });

  it("an Origin or forwarding header written after 2000 others is refused as it is when written first", async () => {
    const l = await listener();
    const body = initializeBody();
    const start = `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${l.port}\r\naccept: application/json, text/event-stream\r\ncontent-type: application/json\r\n`;
    const pad = "z:\r\n".repeat(2000);
    for (const late of [`origin: http://evil.test:${l.port}\r\n`, "x-forwarded-for: 10.0.0.1\r\n"]) {
      const answer = await rawRequest(l.port, `${start}${pad}${late}`, body);
      expect(answer.split("\r\n")[0], late).toBe("HTTP/1.1 403 Forbidden");
      expect(answer).not.toMatch(/mcp-session-id/i);
    }
    // the same padding and nothing after it is served
    expect((await rawRequest(l.port, `${start}${pad}`, body)).split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
  });
});
