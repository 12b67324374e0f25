// A declared host that echoes the credential it was sent, through a real gateway while one of
// its calls is granted and in flight (the release window open): in a custom header, a
// Set-Cookie, Content-Location, Link, Refresh, WWW-Authenticate, the status line, and the body
// (an error quoting the token, an httpbin-style echo of the Authorization header), the body
// split across chunks at every offset of the value, gzip-compressed though the proxy asked for
// identity, and in a coding the proxy cannot read. This process plays the server, over the
// proxy's CONNECT tunnel and TLS (and its absolute-form path): every byte it is given is read
// for the value, which it must never get, while the upstream must have got it each time.
import { writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { connect } from "node:net";
import { join } from "node:path";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { deflateRawSync, deflateSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import {
  approvedCall,
  egressKit,
  exchange,
  type Gw,
  nodeServer,
  PLACEHOLDER,
  proxyPort,
  released,
  SECRET,
} from "./egress-kit.js";
import { httpsUpstream, httpUpstream, type Upstream } from "./egress-upstreams.js";

const k = egressKit();
const AUTH = `Authorization: Bearer ${PLACEHOLDER}\r\n`;
/** what the upstream got of each request: its path, whether it carried the value, its Accept-Encoding */
const got: { path: string; value: boolean; acceptEncoding: string | undefined }[] = [];

/** Answers by path, echoing the token it got (`Bearer <token>`) wherever the path says. */
function echoing(req: IncomingMessage, res: ServerResponse) {
  const u = new URL(req.url ?? "/", "http://x");
  const token = (req.headers.authorization ?? "").replace(/^Bearer /, "");
  got.push({ path: u.pathname, value: token === SECRET, acceptEncoding: req.headers["accept-encoding"] });
  const body = `{"error":"invalid token ${token}","headers":{"Authorization":"${req.headers.authorization}"}}`;
  if (u.pathname === "/headers") {
    res.setHeader("X-Echo", `Bearer ${token}`);
    res.setHeader("Set-Cookie", [`session=${token}; Path=/; HttpOnly`, "plain=1"]);
    res.setHeader("Content-Location", `/r?key=${encodeURIComponent(token)}`);
    res.setHeader("Link", `</next?key=${encodeURIComponent(token).toLowerCase()}>; rel="next"`);
    res.setHeader("Refresh", `0; url=/x?k=${token}`);
    res.setHeader("WWW-Authenticate", `Bearer error="invalid_token", token="${token}"`);
    res.writeHead(401, `Bad ${token}`, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body, "latin1"),
    });
    return res.end(req.method === "HEAD" ? undefined : body);
  }
  if (u.pathname === "/no-content") return res.writeHead(204, { "x-echo": token }).end();
  if (u.pathname === "/split") {
    // chunked, cut inside the value: two chunks on the wire, the second after a pause
    const at = `invalid token `.length + Number(u.searchParams.get("at"));
    const text = Buffer.from(`invalid token ${token}.`, "latin1");
    res.writeHead(400, { "content-type": "text/plain" });
    res.write(text.subarray(0, at));
    return setTimeout(() => res.end(text.subarray(at)), 5);
  }
  if (u.pathname === "/gzip") {
    // compressed although the request asked for identity
    const zipped = gzipSync(Buffer.from(`${body}\n`.repeat(50), "latin1"));
    res.writeHead(200, { "content-encoding": "gzip", "content-length": zipped.length });
    res.write(zipped.subarray(0, 17));
    return setTimeout(() => res.end(zipped.subarray(17)), 5);
  }
  if (u.pathname === "/cut") {
    // the connection dies partway through the value: what the proxy held back must never go on
    res.writeHead(200, { "content-type": "text/plain", "content-length": 200 });
    res.write(`${"x".repeat(100)} invalid token ${token.slice(0, 20)}`);
    return setTimeout(() => res.socket?.destroy(), 20);
  }
  if (u.pathname === "/spellings") {
    // the value in the spellings encoders give it: Basic auth and base64 echoes, JSON escapes,
    // HTML references, URL escapes in mixed case, hex
    const b64 = (t: string) => Buffer.from(t, "utf8").toString("base64");
    const every = (f: (c: string) => string) => [...token].map(f).join("");
    const spelled = [
      `"json":"${every((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)}"`,
      `"JSON":"${every((c) => (/[a-z]/.test(c) ? c : `\\u00${c.charCodeAt(0).toString(16).toUpperCase()}`))}"`,
      `"html":"${every((c) => `&#${c.charCodeAt(0)};`)}"`,
      `"htmlHex":"${every((c) => `&#x${c.charCodeAt(0).toString(16)};`)}"`,
      // every character escaped, the escapes' hex in upper and lower case by turns
      `"url":"${every((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`).replace(/%[0-9a-f]{2}/g, (e, at: number) => (at % 2 === 0 ? e.toUpperCase() : e))}"`,
      `"base64":"${b64(token)}"`,
      `"base64url":"${Buffer.from(token).toString("base64url")}"`,
      `"basic":"Basic ${b64(`user:${token}`)}"`,
      `"basic2":"Basic ${b64(`admin:${token}`)}"`,
      `"hex":"${Buffer.from(token).toString("hex")}"`,
    ];
    const body = `{${spelled.join(",")}}`;
    res.setHeader("X-Basic", `Basic ${b64(`user:${token}`)}`);
    res.setHeader("X-Base64", b64(token));
    res.writeHead(200, { "content-type": "application/json" });
    res.write(body.slice(0, 100));
    return setTimeout(() => res.end(body.slice(100)), 5);
  }
  if (u.pathname === "/held") {
    // the upstream hands over the key it holds for the account, to a request that carried none
    const body = `{"your_key":"${SECRET}","again":"${encodeURIComponent(SECRET)}"}`;
    res.setHeader("X-Key", SECRET);
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    return res.end(body);
  }
  if (u.pathname === "/deflate" || u.pathname === "/deflate-raw") {
    // deflate as RFC 9110 says (zlib), and as some servers send it (raw, no zlib header)
    const text = Buffer.from(`${body}\n`.repeat(20), "latin1");
    const coded = u.pathname === "/deflate" ? deflateSync(text) : deflateRawSync(text);
    res.writeHead(200, { "content-encoding": "deflate", "content-length": coded.length });
    res.write(coded.subarray(0, 9));
    return setTimeout(() => res.end(coded.subarray(9)), 5);
  }
  if (u.pathname === "/bad-gzip") {
    // a gzip body that starts well (the head goes on, some text is decoded) and then is not gzip
    const zipped = gzipSync(Buffer.from(`${"ok ".repeat(2000)}invalid token ${token}`, "latin1"));
    res.writeHead(203, { "content-encoding": "gzip", "content-length": zipped.length });
    res.write(zipped.subarray(0, 40));
    return setTimeout(() => {
      const rest = Buffer.from(zipped.subarray(40));
      rest.fill(0xff, 0, 16);
      res.end(rest);
    }, 20);
  }
  if (u.pathname === "/zstd") {
    res.writeHead(200, { "content-encoding": "zstd", "content-length": Buffer.byteLength(body) });
    return res.end(body);
  }
  res.writeHead(200, { "content-type": "text/plain" }).end(`ok ${u.pathname}`);
}

let port: number;
let gw: Gw;
let stateDir: string;
let echo: Upstream & { caFile: string };
let endCall: () => Promise<void>;

beforeAll(async () => {
  const plain = await httpUpstream();
  echo = await httpsUpstream(tempDir("portcullis-echo-"), echoing);
  k.cleanup.push(
    () => plain.close(),
    () => echo.close(),
  );
  const declared = [plain.url.slice(7), echo.url.slice(8)];
  stateDir = newStateDir();
  const dir = k.project(nodeServer, declared);
  await k.storeHttpSecret(stateDir, ...declared);
  await k.unlock(stateDir);
  gw = await k.gateway(dir, stateDir, { NODE_EXTRA_CA_CERTS: echo.caFile });
  port = await proxyPort(gw);
  // a call that stays in flight until the test says, so the window is open for this process
  const done = join(tempDir("portcullis-echo-"), "done");
  const call = approvedCall(gw, stateDir, "fetch_url", { url: `${plain.url}/open`, after: done }, new Set());
  await waitFor(() => released(plain).length > 0, 20_000, "the call's first request released");
  endCall = async () => {
    writeFileSync(done, "");
    await call;
  };
}, 60_000);

afterAll(async () => {
  await endCall?.();
  await k.cleanupAll();
});

/** When each undecodable answer was asked for (its record is looked for from then on). */
const cutAt: number[] = [];

/** Every byte the proxy gave this process (the server), over all the tests. */
const given: Buffer[] = [];

/** A TLS connection through a CONNECT tunnel to the echo upstream, its bytes kept as they come. */
async function tunnel() {
  const s = connect(port, "127.0.0.1");
  s.write(`CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nHost: 127.0.0.1:${echo.port}\r\n\r\n`);
  await new Promise((r) => s.once("data", r));
  // (the server trusts the proxy's leaf in use; what is under test is what it is given)
  const t: TLSSocket = tlsConnect({ socket: s, servername: "127.0.0.1", rejectUnauthorized: false });
  await new Promise((r) => t.once("secureConnect", r));
  let buf = Buffer.alloc(0);
  let closed = false;
  let wake = () => {};
  t.on("data", (d: Buffer) => {
    given.push(d);
    buf = Buffer.concat([buf, d]);
    wake();
  });
  t.on("close", () => {
    closed = true;
    wake();
  });
  t.on("error", () => {});
  const until = async (ready: () => number | null): Promise<number> => {
    for (;;) {
      const n = ready();
      if (n !== null) return n;
      if (closed) throw new Error(`closed with ${JSON.stringify(buf.toString("latin1"))}`);
      await new Promise<void>((r) => {
        wake = r;
      });
    }
  };
  const take = (n: number) => {
    const b = buf.subarray(0, n);
    buf = buf.subarray(n);
    return b;
  };
  /** one request and its answer: the head as text, the body with its chunk framing taken off */
  const ask = async (method: string, path: string, extra = "", version = "1.1", auth = AUTH) => {
    t.write(`${method} ${path} HTTP/${version}\r\nHost: 127.0.0.1:${echo.port}\r\n${auth}${extra}\r\n`);
    const end = await until(() => {
      const i = buf.indexOf("\r\n\r\n");
      return i < 0 ? null : i + 4;
    });
    const head = take(end).toString("latin1");
    const status = Number(head.slice(9, 12));
    if (method === "HEAD" || status === 204 || status === 304) return { head, body: "" };
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (length)
      return {
        head,
        body: take(await until(() => (buf.length >= Number(length[1]) ? Number(length[1]) : null))).toString(
          "latin1",
        ),
      };
    if (version === "1.0") {
      // delimited by the close
      await until(() => (closed ? 0 : null)).catch(() => 0);
      return { head, body: take(buf.length).toString("latin1") };
    }
    expect(head).toMatch(/\r\ntransfer-encoding: chunked\r\n/i);
    let body = "";
    for (;;) {
      const line = await until(() => {
        const i = buf.indexOf("\r\n");
        return i < 0 ? null : i + 2;
      });
      const size = Number.parseInt(take(line).toString("latin1"), 16);
      await until(() => (buf.length >= size + 2 ? size + 2 : null));
      body += take(size + 2)
        .toString("latin1")
        .slice(0, size);
      if (size === 0) return { head, body };
    }
  };
  return { ask, close: () => t.destroy(), closedAfter: () => until(() => (closed ? 0 : null)) };
}

/** The body of an answer read whole (its head and chunk framing taken off). */
function bodyOf(answer: string): string {
  const end = answer.indexOf("\r\n\r\n") + 4;
  const head = answer.slice(0, end);
  if (!/\r\ntransfer-encoding: chunked\r\n/i.test(head)) return answer.slice(end);
  let body = "";
  for (let at = end; ; ) {
    const nl = answer.indexOf("\r\n", at);
    const size = Number.parseInt(answer.slice(at, nl), 16);
    if (!(size > 0)) return body;
    body += answer.slice(nl + 2, nl + 2 + size);
    at = nl + 2 + size + 2;
  }
}

const valueGiven = () => Buffer.concat(given).includes(SECRET);

describe("an upstream that echoes the released value", () => {
  it("in its headers and status line: every one gets the placeholder; HEAD and 204 too", async () => {
    const c = await tunnel();
    const a = await c.ask("GET", "/headers");
    expect(a.head).toMatch(/^HTTP\/1\.1 401 Bad portcullis-placeholder:inventory-api\r\n/);
    for (const line of [
      `X-Echo: Bearer ${PLACEHOLDER}`,
      `Set-Cookie: session=${PLACEHOLDER}; Path=/; HttpOnly`,
      "Set-Cookie: plain=1",
      // (this value has nothing to escape: its URL-encoded spelling is the value as written)
      `Content-Location: /r?key=${PLACEHOLDER}`,
      `Link: </next?key=${PLACEHOLDER}>; rel="next"`,
      `Refresh: 0; url=/x?k=${PLACEHOLDER}`,
      `WWW-Authenticate: Bearer error="invalid_token", token="${PLACEHOLDER}"`,
    ])
      expect(a.head).toContain(`\r\n${line}\r\n`);
    expect(a.body).toBe(
      `{"error":"invalid token ${PLACEHOLDER}","headers":{"Authorization":"Bearer ${PLACEHOLDER}"}}`,
    );
    // the upstream's length no longer holds: written again for the placeholders when all of the
    // body came with its head, else the body goes in chunks (the next asks on this connection
    // are read by that framing)
    const length = /\r\ncontent-length: (\d+)\r\n/i.exec(a.head)?.[1];
    if (length !== undefined) expect(Number(length)).toBe(Buffer.byteLength(a.body));
    else expect(a.head).toMatch(/\r\ntransfer-encoding: chunked\r\n/i);
    // on the same kept connection: a HEAD, a 204, then a GET again
    const h = await c.ask("HEAD", "/headers");
    expect(h.head).toContain(`\r\nX-Echo: Bearer ${PLACEHOLDER}\r\n`);
    const n = await c.ask("GET", "/no-content");
    expect(n.head).toMatch(/^HTTP\/1\.1 204 /);
    expect(n.head.toLowerCase()).toContain(`\r\nx-echo: ${PLACEHOLDER}\r\n`);
    expect((await c.ask("GET", "/plain")).body).toBe("ok /plain");
    c.close();
    expect(
      got.filter((g) => ["/headers", "/no-content", "/plain"].includes(g.path)).map((g) => g.value),
    ).toEqual([true, true, true, true]);
    expect(valueGiven()).toBe(false);
  });

  it("in a body split across chunks at every offset of the value, on one kept connection", async () => {
    const c = await tunnel();
    for (let at = 0; at <= SECRET.length; at++) {
      const a = await c.ask("GET", `/split?at=${at}`);
      expect(a.body, `split at ${at}`).toBe(`invalid token ${PLACEHOLDER}.`);
    }
    c.close();
    expect(got.filter((g) => g.path === "/split").map((g) => g.value)).toEqual(
      Array(SECRET.length + 1).fill(true),
    );
    expect(valueGiven()).toBe(false);
  });

  it("in a gzip body though identity was asked for: given decoded, the value out; another coding: a 502, nothing of it", async () => {
    const c = await tunnel();
    const a = await c.ask("GET", "/gzip", "Accept-Encoding: gzip, br\r\n");
    expect(a.head.toLowerCase()).not.toContain("content-encoding");
    expect(a.body).toBe(
      `{"error":"invalid token ${PLACEHOLDER}","headers":{"Authorization":"Bearer ${PLACEHOLDER}"}}\n`.repeat(
        50,
      ),
    );
    const z = await c.ask("GET", "/zstd");
    expect(z.head).toMatch(/^HTTP\/1\.1 502 /);
    expect(z.body).toContain('Content-Encoding "zstd"');
    await c.closedAfter();
    // an HTTP/1.0 client: the decoded body delimited by the close, no chunks
    const old = await tunnel();
    const o = await old.ask("GET", "/gzip", "", "1.0");
    expect(o.head.toLowerCase()).toContain("\r\nconnection: close\r\n");
    expect(o.head.toLowerCase()).not.toMatch(/transfer-encoding|content-length|content-encoding/);
    expect(o.body).toBe(
      `{"error":"invalid token ${PLACEHOLDER}","headers":{"Authorization":"Bearer ${PLACEHOLDER}"}}\n`.repeat(
        50,
      ),
    );
    const asked = got.filter((g) => g.path === "/gzip" || g.path === "/zstd");
    expect(asked.map((g) => [g.value, g.acceptEncoding])).toEqual([
      [true, "identity"],
      [true, "identity"],
      [true, "identity"],
    ]);
    expect(valueGiven()).toBe(false);
  });

  it("whose connection dies partway through the value: the answer is cut, the part of the value held back never given", async () => {
    const c = await tunnel();
    const before = Buffer.concat(given).length;
    await expect(c.ask("GET", "/cut")).rejects.toThrow(/closed/);
    const mine = Buffer.concat(given).subarray(before).toString("latin1");
    // the body had begun (the head and the bytes before the value went on), then was cut: its
    // chunks never ended, and of the 20 bytes of the value sent, none is given
    expect(mine).toMatch(/^HTTP\/1\.1 200 /);
    expect(mine).toContain("x".repeat(100));
    expect(mine).not.toContain(SECRET.slice(0, 7));
    expect(mine).not.toContain("\r\n0\r\n\r\n");
    expect(got.filter((g) => g.path === "/cut").map((g) => g.value)).toEqual([true]);
  });

  it("in other spellings: base64 (whole, URL-safe, a Basic auth echo), JSON and HTML escapes, mixed-case URL escapes, hex", async () => {
    const c = await tunnel();
    const a = await c.ask("GET", "/spellings");
    c.close();
    const b64 = (t: string) => Buffer.from(t, "utf8").toString("base64");
    // a Basic echo decodes to the placeholder where the value was (the base64 characters at the
    // edges hold bits of the bytes around it as well, and stay as they were)
    const basic = /\r\nX-Basic: Basic ([^\r]+)\r\n/.exec(a.head)![1]!;
    expect(Buffer.from(basic, "base64").toString("latin1")).toMatch(
      /^user:.ortcullis-placeholder:inventory-ap.$/,
    );
    expect(a.head).toContain(`\r\nX-Base64: ${b64(PLACEHOLDER)}\r\n`);
    const body = JSON.parse(a.body) as Record<string, string>;
    expect(body).toMatchObject({
      json: PLACEHOLDER,
      JSON: PLACEHOLDER,
      html: PLACEHOLDER,
      htmlHex: PLACEHOLDER,
      url: "portcullis-placeholder%3Ainventory-api",
      base64: b64(PLACEHOLDER),
      base64url: Buffer.from(PLACEHOLDER).toString("base64url"),
      hex: Buffer.from(PLACEHOLDER).toString("hex"),
    });
    for (const key of ["basic", "basic2"]) {
      const decoded = Buffer.from(body[key]!.slice("Basic ".length), "base64").toString("latin1");
      expect(decoded).toMatch(/^(user|admin):.ortcullis-placeholder:inventory-ap.$/);
    }
    expect(got.filter((g) => g.path === "/spellings").map((g) => g.value)).toEqual([true]);
    expect(valueGiven()).toBe(false);
    // nothing this process read decodes to the value either
    const all = Buffer.concat(given).toString("latin1");
    for (const m of all.match(/[A-Za-z0-9+/_-]{16,}={0,2}/g) ?? [])
      for (const skip of [0, 1, 2, 3])
        expect(Buffer.from(m.slice(skip), "base64").toString("latin1")).not.toContain(SECRET.slice(2, -2));
  });

  it("in the answer to a request that carried no value, while the call has one released to the host", async () => {
    const c = await tunnel();
    // on the same tunnel: a request with the placeholder, then one without
    expect((await c.ask("GET", "/plain")).body).toBe("ok /plain");
    const a = await c.ask("GET", "/held", "", "1.1", "");
    c.close();
    expect(a.head).toContain(`\r\nX-Key: ${PLACEHOLDER}\r\n`);
    expect(a.body).toBe(`{"your_key":"${PLACEHOLDER}","again":"${PLACEHOLDER}"}`);
    // a new tunnel whose only request carries none
    const d = await tunnel();
    const b = await d.ask("GET", "/held", "", "1.1", "");
    d.close();
    expect(b.body).toBe(`{"your_key":"${PLACEHOLDER}","again":"${PLACEHOLDER}"}`);
    expect(got.filter((g) => g.path === "/held").map((g) => g.value)).toEqual([false, false]);
    expect(valueGiven()).toBe(false);
  });

  it("in a deflate body, zlib-wrapped or raw (no zlib header, as some servers send it): decoded, the value out", async () => {
    const c = await tunnel();
    const want =
      `{"error":"invalid token ${PLACEHOLDER}","headers":{"Authorization":"Bearer ${PLACEHOLDER}"}}\n`.repeat(
        20,
      );
    for (const path of ["/deflate", "/deflate-raw"]) {
      const a = await c.ask("GET", path);
      expect(a.head, path).toMatch(/^HTTP\/1\.1 200 /);
      expect(a.head.toLowerCase()).not.toContain("content-encoding");
      expect(a.body, path).toBe(want);
    }
    c.close();
    expect(valueGiven()).toBe(false);
  });

  it("in a gzip body that cannot be decoded partway, after its head went on: cut, none of the value given", async () => {
    const c = await tunnel();
    const before = Buffer.concat(given).length;
    cutAt.push(Date.now());
    await expect(c.ask("GET", "/bad-gzip")).rejects.toThrow(/closed/);
    const mine = Buffer.concat(given).subarray(before).toString("latin1");
    expect(mine).toMatch(/^HTTP\/1\.1 203 /);
    expect(mine).not.toContain("\r\n0\r\n\r\n");
    expect(valueGiven()).toBe(false);
  });

  it("through the absolute-form path (https:// URLs sent to the proxy): headers and body", async () => {
    const out = await exchange(
      port,
      `GET https://127.0.0.1:${echo.port}/headers HTTP/1.1\r\nHost: 127.0.0.1:${echo.port}\r\n${AUTH}Connection: close\r\n\r\n`,
    );
    given.push(Buffer.from(out, "latin1"));
    expect(out).toMatch(/^HTTP\/1\.1 401 Bad portcullis-placeholder:inventory-api\r\n/);
    expect(out).toContain(`\r\nSet-Cookie: session=${PLACEHOLDER}; Path=/; HttpOnly\r\n`);
    // (the body as read, its chunks joined: where the proxy's stream cuts them is its own)
    expect(bodyOf(out)).toContain(`"invalid token ${PLACEHOLDER}"`);
    const gz = await exchange(
      port,
      `GET https://127.0.0.1:${echo.port}/gzip HTTP/1.1\r\nHost: 127.0.0.1:${echo.port}\r\n${AUTH}Connection: close\r\n\r\n`,
    );
    given.push(Buffer.from(gz, "latin1"));
    expect(gz).toMatch(/^HTTP\/1\.1 200 /);
    expect(bodyOf(gz)).toContain(`"invalid token ${PLACEHOLDER}"`);
    // a request without the placeholder, while the call has the value released to the host
    const held = await exchange(
      port,
      `GET https://127.0.0.1:${echo.port}/held HTTP/1.1\r\nHost: 127.0.0.1:${echo.port}\r\nConnection: close\r\n\r\n`,
    );
    given.push(Buffer.from(held, "latin1"));
    expect(held).toContain(`\r\nX-Key: ${PLACEHOLDER}\r\n`);
    expect(bodyOf(held)).toBe(`{"your_key":"${PLACEHOLDER}","again":"${PLACEHOLDER}"}`);
    const raw = await exchange(
      port,
      `GET https://127.0.0.1:${echo.port}/deflate-raw HTTP/1.1\r\nHost: 127.0.0.1:${echo.port}\r\n${AUTH}Connection: close\r\n\r\n`,
    );
    given.push(Buffer.from(raw, "latin1"));
    expect(raw).toMatch(/^HTTP\/1\.1 200 /);
    expect(bodyOf(raw)).toContain(`"invalid token ${PLACEHOLDER}"`);
    cutAt.push(Date.now());
    const bad = await exchange(
      port,
      `GET https://127.0.0.1:${echo.port}/bad-gzip HTTP/1.1\r\nHost: 127.0.0.1:${echo.port}\r\n${AUTH}Connection: close\r\n\r\n`,
    );
    given.push(Buffer.from(bad, "latin1"));
    expect(bad).toMatch(/^HTTP\/1\.1 203 /);
    expect(bad).not.toContain("\r\n0\r\n\r\n");
    // the upstream's connection dies partway through the value: cut, none of it given
    const cut = await exchange(
      port,
      `GET https://127.0.0.1:${echo.port}/cut HTTP/1.1\r\nHost: 127.0.0.1:${echo.port}\r\n${AUTH}Connection: close\r\n\r\n`,
    );
    given.push(Buffer.from(cut, "latin1"));
    expect(cut).toMatch(/^HTTP\/1\.1 200 /);
    expect(cut).not.toContain(SECRET.slice(0, 7));
    expect(cut).not.toContain("\r\n0\r\n\r\n");
    expect(got.filter((g) => g.path === "/headers").at(-1)?.value).toBe(true);
    expect(got.filter((g) => g.path === "/cut").map((g) => g.value)).toEqual([true, true]);
    expect(got.filter((g) => g.path === "/gzip").at(-1)).toEqual({
      path: "/gzip",
      value: true,
      acceptEncoding: "identity",
    });
    expect(valueGiven()).toBe(false);
  });
});

describe("the record of an answer cut after its head went on", () => {
  it("is one egress event, failed, with the status the client got (tunnel and absolute form)", async () => {
    await endCall();
    await gw.close();
    const exported = await runCli(["audit", "export"], { stateDir });
    expect(exported.code, exported.stderr).toBe(0);
    // the egress records written since the first undecodable answer was asked for, opened
    const since = Math.min(...cutAt) - 1000;
    const seqs = exported.stdout
      .split("\n")
      .filter((l) => l.includes('"type":"egress"'))
      .map((l) => JSON.parse(l) as { header: { seq: number; time: string } })
      .filter((r) => Date.parse(r.header.time) >= since)
      .map((r) => r.header.seq);
    const events: string[] = [];
    for (const seq of seqs) {
      const shown = await runCli(["audit", "show", String(seq), "--json"], {
        stateDir,
        env: passphraseEnv(),
      });
      expect(shown.code, shown.stderr).toBe(0);
      events.push(JSON.stringify((JSON.parse(shown.stdout) as { event: unknown }).event));
    }
    // the undecodable gzip (status 203, once in a tunnel and once in absolute form)
    const cut = events.filter((e) => e.includes('"status":203'));
    expect(cut.length).toBeGreaterThan(0);
    for (const e of cut) expect(e).toContain('"outcome":"failed"');
    expect(cut.map((e) => Number(/"requests":(\d+)/.exec(e)?.[1] ?? 1)).reduce((a, b) => a + b, 0)).toBe(
      cutAt.length,
    );
    expect(exported.stdout).not.toContain(SECRET);
  });
});
