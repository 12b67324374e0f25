// Bad input to the egress proxy, over raw sockets and from a real server: each gets a clear HTTP
// error, the proxy keeps serving, and the gateway never crashes. And a bad "egress" setting is
// refused at start, naming the key.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import {
  approvedCall,
  egressKit,
  exchange,
  nodeServer,
  PLACEHOLDER,
  proxyPort,
  released,
  text,
} from "./egress-kit.js";
import { silentUpstream } from "./egress-upstreams.js";

const k = egressKit();
afterEach(() => k.cleanupAll());

describe("the egress proxy and bad input", () => {
  it("malformed hosts, ports and URLs, garbage in a tunnel, an upstream that never answers: clear errors, and it keeps serving", async () => {
    const { plain, tls, hosts } = await k.upstreams();
    const silent = await silentUpstream();
    k.cleanup.push(() => silent.close());
    // 127.0.0.1:443 declared too: nothing listens there, and nothing is sent there in clear
    const declared = [...hosts, `127.0.0.1:${silent.port}`, "127.0.0.1:443"];
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, declared);
    await k.storeHttpSecret(stateDir, ...declared);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir, {
      PORTCULLIS_EGRESS_TIMEOUT_MS: "1500",
      NODE_EXTRA_CA_CERTS: tls.caFile,
    });
    const port = await proxyPort(gw);

    const connectBadHost = await exchange(port, "CONNECT bad_host!:443 HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(connectBadHost).toMatch(/^HTTP\/1\.1 400 /);
    expect(connectBadHost).toContain("CONNECT needs host:port");
    for (const target of ["127.0.0.1:70000", "127.0.0.1:0", "127.0.0.1", "[zz::1]:443"]) {
      const r = await exchange(port, `CONNECT ${target} HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(r, target).toMatch(/^HTTP\/1\.1 400 /);
    }
    const badHost = await exchange(port, "GET http://bad_host/ HTTP/1.1\r\nHost: bad_host\r\n\r\n");
    expect(badHost).toMatch(/^HTTP\/1\.1 400 /);
    expect(badHost).toContain("not a host name or address");
    const badUrl = await exchange(port, "GET http://[zz/ HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(badUrl).toMatch(/^HTTP\/1\.1 400 /);
    const relative = await exchange(port, "GET /relative HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(relative).toMatch(/^HTTP\/1\.1 400 /);
    expect(relative).toContain("not an absolute http:// URL");
    const ftp = await exchange(port, "GET ftp://127.0.0.1/ HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(ftp).toMatch(/^HTTP\/1\.1 400 /);
    expect(ftp).toContain("only http:// and https://");
    // absolute-form https:// (as axios sends it): the proxy speaks TLS upstream, and releases
    const absoluteTls = await exchange(
      port,
      `GET ${tls.url}/absolute?key=portcullis-placeholder%3Ainventory-api HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    expect(absoluteTls).toMatch(/^HTTP\/1\.1 200 /);
    expect(tls.received.map((x) => [x.path, x.key])).toEqual([["/absolute", PLACEHOLDER]]); // no call in flight
    const garbage = await exchange(port, "\x00\x01 not http at all\r\n\r\n");
    expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
    // garbage inside a tunnel to a declared host: read as HTTP, refused as such
    const inTunnel = await exchange(
      port,
      `CONNECT 127.0.0.1:${plain.port} HTTP/1.1\r\nHost: x\r\n\r\n`,
      "\x01\x02 garbage\r\n\r\n",
    );
    expect(inTunnel).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 400 /);
    expect(inTunnel).toContain("not a well-formed HTTP/1.1 request");
    // a WebSocket upgrade to a declared host, in a tunnel and in absolute form: 501 before anything
    // is released or sent (with its Upgrade header dropped it would reach the host as a plain GET)
    const ws = `Host: 127.0.0.1:${plain.port}\r\nConnection: Upgrade\r\nUpgrade: WebSocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`;
    const wsTunnel = await exchange(
      port,
      `CONNECT 127.0.0.1:${plain.port} HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /ws?key=portcullis-placeholder%3Ainventory-api HTTP/1.1\r\n${ws}`,
    );
    expect(wsTunnel).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 501 /);
    expect(wsTunnel).toContain("not WebSockets; nothing was sent");
    const wsAbsolute = await exchange(port, `GET ${plain.url}/ws HTTP/1.1\r\n${ws}`);
    expect(wsAbsolute).toMatch(/^HTTP\/1\.1 501 /);
    // a request head over 64 KiB, in a tunnel and in absolute form: 431, and the proxy serves on
    const huge = `X-Filler: ${"a".repeat(70 * 1024)}\r\n`;
    const bigTunnel = await exchange(
      port,
      `CONNECT 127.0.0.1:${plain.port} HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /big HTTP/1.1\r\nHost: 127.0.0.1:${plain.port}\r\n${huge}\r\n`,
    );
    expect(bigTunnel).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 431 /);
    const bigAbsolute = await exchange(port, `GET ${plain.url}/big HTTP/1.1\r\nHost: x\r\n${huge}\r\n`);
    expect(bigAbsolute).toMatch(/^HTTP\/1\.1 431 /);
    // plain HTTP to port 443 of a declared host, in a tunnel and in absolute form: 400 before
    // anything is released or sent (a credential would cross the network in clear)
    const plain443 = await exchange(
      port,
      "CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET /k?key=portcullis-placeholder%3Ainventory-api HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n",
    );
    expect(plain443).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 400 /);
    expect(plain443).toContain("plain HTTP to port 443");
    const absolute443 = await exchange(
      port,
      "GET http://127.0.0.1:443/k HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n",
    );
    expect(absolute443).toMatch(/^HTTP\/1\.1 400 /);
    expect(absolute443).toContain("plain HTTP to port 443");
    // a broken TLS hello inside a tunnel: the tunnel is closed, nothing else happens
    await exchange(
      port,
      `CONNECT 127.0.0.1:${plain.port} HTTP/1.1\r\nHost: x\r\n\r\n`,
      Buffer.from([0x16, 3, 1, 0, 5, 1, 2, 3, 4, 5, 6]),
    );
    expect(plain.received).toEqual([]);

    // an upstream that never answers: the call fails cleanly with a 504, the proxy keeps serving
    const seen = new Set<string>();
    const stuck = await approvedCall(gw, stateDir, "fetch_url", { url: `${silent.url}/never` }, seen);
    expect(text(stuck)).toMatch(/^504 portcullis egress: 127\.0\.0\.1:\d+: no answer within 1500 ms/);
    const fine = await approvedCall(gw, stateDir, "fetch_url", { url: `${plain.url}/still` }, seen);
    expect(text(fine)).toBe("200 upstream ok /still");
    expect(released(plain).map((x) => x.path)).toEqual(["/still"]);
    expect(gw.stderr()).not.toMatch(/internal error|Unhandled|TypeError/);
  });

  it('an "egress" setting that is not "record" or "declared-only" is refused at start, naming the key', async () => {
    const dir = tempDir("portcullis-egress-config-");
    writeFileSync(
      join(dir, "portcullis.json"),
      JSON.stringify({ servers: { api: { command: NODE, args: ["x.mjs"], egress: "sometimes" } } }),
    );
    const r = await runCli(["run", "api"], { cwd: dir, stateDir: newStateDir() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("servers.api.egress");
    expect(r.stderr).toContain('"declared-only"');
  });
});
