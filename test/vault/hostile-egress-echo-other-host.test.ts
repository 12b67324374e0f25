// A value released to one host, handed back by another: a service whose hosts share the account
// (an API host and a console or billing host) may hold the key the proxy sent to one of them and
// give it out from another, to a request that carried no credential. While a value is released for
// a call in flight, every answer the proxy reads is scrubbed of it, whatever host it comes from: a
// host declared for the same scope, one declared only for another scope, and one not declared at
// all reached in absolute form. In-process proxy and vault holder; host A is a real HTTP server
// that gets the value, the others real TCP upstreams that answer every request with the key.
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCa } from "../../src/vault/egress/certs.js";
import { type CallInFlight, type EgressProxy, startEgressProxy } from "../../src/vault/egress/proxy.js";
import { holderSocketPath, runHolder } from "../../src/vault/holder.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import { exchange, type RawUpstream, rawUpstream } from "./egress-kit.js";

const SECRET = "other-host-secret-8c41d7";
const PLACEHOLDER = "portcullis-placeholder:api";
const quiet = { info() {}, warn() {}, debug() {}, status() {} };

/** What a host that holds the account's key answers to anything: the key, in a header and the body. */
const body = `{"key":"${SECRET}","b64":"${Buffer.from(SECRET).toString("base64")}","url":"${encodeURIComponent(`k=${SECRET}`).replaceAll("-", "%2D")}"}`;
const KEY_ANSWER = `HTTP/1.1 200 OK\r\nX-Key: ${SECRET}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
/** The same answer with the key taken out, as the proxy must give it. */
const cleanBody = `{"key":"${PLACEHOLDER}","b64":"${Buffer.from(PLACEHOLDER).toString("base64")}","url":"k%3Dportcullis-placeholder%3Aapi"}`;

let stateDir: string;
let proxy: EgressProxy;
let holder: { stop(reason: "locked"): void };
let a: Server;
let aHost: string;
/** declared for the same scope as A */
let b: RawUpstream;
/** declared for another scope only */
let c: RawUpstream;
/** not declared */
let d: RawUpstream;
let window: { epoch: string | null; inFlight: CallInFlight[] } = { epoch: null, inFlight: [] };
/** the Authorization host A got, one per request */
const gotByA: string[] = [];

beforeAll(async () => {
  stateDir = newStateDir();
  a = createServer((req, res) => {
    req.resume();
    gotByA.push(req.headers.authorization ?? "-");
    // (what it got is kept here, not echoed: this test is about the other hosts)
    res.end("ok");
  });
  a.listen(0, "127.0.0.1");
  await once(a, "listening");
  aHost = `127.0.0.1:${(a.address() as { port: number }).port}`;
  [b, c, d] = await Promise.all([
    rawUpstream(false, KEY_ANSWER),
    rawUpstream(false, KEY_ANSWER),
    rawUpstream(false, KEY_ANSWER),
  ]);
  const bHost = `127.0.0.1:${b!.port}`;
  const cHost = `127.0.0.1:${c!.port}`;
  holder = await runHolder({
    socketPath: holderSocketPath(stateDir),
    until: new Date(Date.now() + 3600_000),
    secrets: new Map([
      ["api", { value: SECRET, deliver: "http", hosts: [aHost, bHost] }],
      ["other", { value: "the-other-scope-value", deliver: "http", hosts: [cHost] }],
    ]),
    ca: await createCa("other-host local CA"),
  });
  proxy = await startEgressProxy({
    stateDir,
    credentials: [
      { env: "API_KEY", secret: "api", deliver: "http", hosts: [aHost, bHost] },
      { env: "OTHER_KEY", secret: "other", deliver: "http", hosts: [cHost] },
    ],
    mode: "record",
    calls: () => window,
    timeoutMs: 5000,
    onRecord: () => {},
    log: quiet,
  });
});

afterAll(async () => {
  await proxy?.close();
  holder?.stop("locked");
  await Promise.all([b?.close(), c?.close(), d?.close()]);
  a?.closeAllConnections();
  a?.close();
  removeDir(stateDir);
});

/** A GET in absolute form with no credential in it; everything the proxy gave back. */
const absolute = (port: number) =>
  exchange(
    proxy.port,
    `GET http://127.0.0.1:${port}/account HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
  );
/** The same inside a CONNECT tunnel (plain HTTP through it); the answer after the CONNECT's 200. */
async function tunnelled(port: number): Promise<string> {
  const out = await exchange(
    proxy.port,
    `CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`,
    `GET /account HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
  );
  expect(out).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\n/);
  return out.slice(out.indexOf("\r\n\r\n") + 4);
}

/** The body of an answer read whole (its chunk framing, if any, taken off). */
function bodyOf(answer: string): string {
  const end = answer.indexOf("\r\n\r\n") + 4;
  if (!/\r\ntransfer-encoding: chunked\r\n/i.test(answer.slice(0, end))) return answer.slice(end);
  let out = "";
  for (let at = end; ; ) {
    const nl = answer.indexOf("\r\n", at);
    const size = Number.parseInt(answer.slice(at, nl), 16);
    if (!(size > 0)) return out;
    out += answer.slice(nl + 2, nl + 2 + size);
    at = nl + 2 + size + 2;
  }
}

function expectClean(answer: string, what: string) {
  expect(answer, what).toMatch(/^HTTP\/1\.1 200 /);
  expect(answer, what).toContain(`\r\nX-Key: ${PLACEHOLDER}\r\n`);
  expect(bodyOf(answer), what).toBe(cleanBody);
  expect(answer, what).not.toContain(SECRET);
  expect(answer, what).not.toContain(Buffer.from(SECRET).toString("base64").slice(0, 16));
}

describe("a value released to one host, handed back by another", () => {
  it("while the call it was released for is in flight, every host's answers have it as its placeholder", async () => {
    window = { epoch: "E1", inFlight: [{ callId: "1", epoch: "E1", scopes: ["api", "other"], key: "k1" }] };
    // released to A, in a request of the call
    const toA = await exchange(
      proxy.port,
      `GET http://${aHost}/use HTTP/1.1\r\nHost: ${aHost}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`,
    );
    expect(toA).toMatch(/^HTTP\/1\.1 200 /);
    expect(gotByA).toEqual([`Bearer ${SECRET}`]);
    // B, declared for the same scope: the requests carried no credential, the answers hold the key
    expectClean(await tunnelled(b.port), "B in a tunnel");
    expectClean(await absolute(b.port), "B in absolute form");
    // C, declared for another scope only
    expectClean(await tunnelled(c.port), "C in a tunnel");
    expectClean(await absolute(c.port), "C in absolute form");
    // D, not declared (absolute form is read: a tunnel to an undeclared host is not)
    expectClean(await absolute(d.port), "D in absolute form");
    // none of them was sent the value, nor asked for a compressed answer while it is released
    for (const u of [b, c, d]) {
      expect(u.text()).not.toContain(SECRET);
      expect(u.text()).toContain("\r\nAccept-Encoding: identity\r\n");
    }
  });

  it("the vault locked since: a TLS tunnel to a declared host, which the proxy can no longer read, is closed, not passed through", async () => {
    // (runs last: the holder is stopped)
    window = { epoch: "E1", inFlight: [{ callId: "2", epoch: "E1", scopes: ["api"], key: "k2" }] };
    await exchange(
      proxy.port,
      `GET http://${aHost}/use HTTP/1.1\r\nHost: ${aHost}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`,
    );
    expect(gotByA.at(-1)).toBe(`Bearer ${SECRET}`);
    // locked: no leaf for B's TLS (none was made before), so its tunnel could only go unread
    holder.stop("locked");
    const before = b.text().length;
    // the first bytes of a TLS ClientHello: whatever B answers would reach this process unread
    const hello = Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00]);
    const out = await exchange(
      proxy.port,
      `CONNECT 127.0.0.1:${b.port} HTTP/1.1\r\nHost: 127.0.0.1:${b.port}\r\n\r\n`,
      hello,
    );
    expect(out).toBe("HTTP/1.1 200 Connection Established\r\n\r\n");
    expect(b.text().length, "nothing reached B").toBe(before);
    // the call ended: nothing released is remembered, and such a tunnel passes unread as before
    window = { epoch: "E1", inFlight: [] };
    const passed = await exchange(
      proxy.port,
      `CONNECT 127.0.0.1:${b.port} HTTP/1.1\r\nHost: 127.0.0.1:${b.port}\r\n\r\n`,
      hello,
      1000,
    );
    expect(passed).toContain(`X-Key: ${SECRET}`);
  });
});
