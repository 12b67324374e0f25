// A declared address is matched by the address it denotes, not by how it is written, through the
// real egress proxy: a real vault holder (started by `unlock`, a process of its own) holding a
// secret stored with `vault set --host 127.1:PORT --host [::ffff:7f00:1]:PORT`, the proxy with
// those declarations as written (the way a configuration from before they were normalised at load
// gives them), real upstreams on 127.0.0.1, and clients speaking CONNECT, absolute-form and TLS.
// A request to 127.0.0.1 in any spelling gets the value; a lookalike (a name that resolves there,
// another address, a name with the address in it, userinfo) is refused (egress "declared-only")
// before anything is sent, and the upstreams never see the value but for the matching requests.
import "reflect-metadata";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import { connect, type Socket } from "node:net";
import { ProxyAgent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { caCertPath } from "../../src/vault/egress/ca.js";
import { createCa, mintLeaf } from "../../src/vault/egress/certs.js";
import { type EgressProxy, type EgressRecord, startEgressProxy } from "../../src/vault/egress/proxy.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { httpsUpstream, httpUpstream, type Upstream } from "./egress-upstreams.js";

const SECRET = "host-spelling-value-8c41e2";
const PLACEHOLDER = "portcullis-placeholder:inventory-api";
const quiet = { info() {}, warn() {}, debug() {}, status() {} };

let stateDir: string;
let plain: Upstream;
let tls: Upstream & { caFile: string };
let proxy: EgressProxy;
const records: EgressRecord[] = [];
/** An HTTPS upstream on [::1], its certificate for that address: what it was asked with. */
let v6: HttpsServer;
let v6Port: number;
const v6Seen: (string | undefined)[] = [];

beforeAll(async () => {
  stateDir = newStateDir();
  plain = await httpUpstream();
  tls = await httpsUpstream(tempDir("portcullis-upstream-"));
  const v6Ca = await createCa("host spellings upstream CA");
  const v6Leaf = await mintLeaf(v6Ca, "::1");
  v6 = createHttpsServer({ cert: v6Leaf.certPem, key: v6Leaf.keyPem }, (req, res) => {
    v6Seen.push(req.headers.authorization);
    res.end(`v6 ok ${req.url}`);
  });
  v6.listen(0, "::1");
  await once(v6, "listening");
  v6Port = (v6.address() as { port: number }).port;
  const declared = [`127.1:${plain.port}`, `[::ffff:7f00:1]:${tls.port}`, `[0:0:0:0:0:0:0:1]:${v6Port}`];
  const set = await runCli(
    ["vault", "set", "inventory-api", "--from-stdin", ...declared.flatMap((h) => ["--host", h])],
    { stateDir, env: passphraseEnv(), input: SECRET },
  );
  expect(set.code, set.stderr).toBe(0);
  const unlock = await runCli(["unlock"], { stateDir, env: passphraseEnv() });
  expect(unlock.code, unlock.stderr).toBe(0);
  proxy = await startEgressProxy({
    stateDir,
    credentials: [{ env: "API_KEY", secret: "inventory-api", deliver: "http", hosts: declared }],
    mode: "declared-only",
    // a call covering the scope is in flight for the whole file: only the host decides
    calls: () => ({ epoch: "E1", inFlight: [{ callId: "1", epoch: "E1", scopes: ["inventory-api"] }] }),
    extraCa: `${readFileSync(tls.caFile, "utf8")}\n${v6Ca.certPem}`,
    timeoutMs: 5000,
    onRecord: (r) => records.push(r),
    log: quiet,
  });
});

afterAll(async () => {
  await proxy?.close();
  await runCli(["lock"], { stateDir });
  await plain?.close();
  await tls?.close();
  v6?.closeAllConnections();
  v6?.close();
});

/** Writes `text` on a new connection to the proxy; everything read until `until` matches or it closes. */
async function exchange(text: string, until: RegExp, then?: string): Promise<string> {
  const s: Socket = connect(proxy.port, "127.0.0.1");
  s.on("error", () => {});
  let got = "";
  let sentThen = false;
  return new Promise((resolve) => {
    s.on("data", (c: Buffer) => {
      got += c.toString("latin1");
      // the request inside a tunnel, once the proxy said the tunnel is open
      if (then !== undefined && !sentThen && /^HTTP\/1\.1 200 /.test(got) && got.includes("\r\n\r\n")) {
        sentThen = true;
        got = "";
        s.write(then);
        return;
      }
      // an answer the proxy rewrites (a value released to the host) comes in chunks of its own:
      // read to its last chunk, and matched without the framing
      const chunked = /\r\ntransfer-encoding: chunked\r\n/i.test(got);
      if (chunked && !got.endsWith("\r\n0\r\n\r\n")) return;
      const text = chunked ? got.replace(/\r\n[0-9a-f]+\r\n/gi, "") : got;
      if ((then === undefined || sentThen) && until.test(text)) {
        s.destroy();
        resolve(text);
      }
    });
    s.on("close", () => resolve(got));
    s.write(text);
  });
}

const head = (host: string) =>
  `Host: ${host}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`;
const absolute = (url: string, host: string) => `GET ${url} HTTP/1.1\r\n${head(host)}`;
const tunnelled = (authority: string, path: string, host = authority) => ({
  connect: `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`,
  inside: `GET ${path} HTTP/1.1\r\n${head(host)}`,
});
const ANSWERED = /upstream ok \S+|portcullis egress: [^\n]*\n/;

const withValue = (u: Upstream) =>
  u.received.filter((r) => r.authorization === `Bearer ${SECRET}`).map((r) => r.path);

describe("a declared address matches every spelling of it, and nothing else", () => {
  it("127.0.0.1 in any notation, absolute-form or through a tunnel, gets the value from the holder", async () => {
    const p = plain.port;
    expect(await exchange(absolute(`http://127.0.0.1:${p}/abs-dotted`, `127.0.0.1:${p}`), ANSWERED)).toMatch(
      /^HTTP\/1\.1 200 [\s\S]*upstream ok \/abs-dotted/,
    );
    expect(await exchange(absolute(`http://0x7f.0.0.1:${p}/abs-hex`, `0x7f.0.0.1:${p}`), ANSWERED)).toMatch(
      /^HTTP\/1\.1 200 [\s\S]*upstream ok \/abs-hex/,
    );
    for (const [authority, path] of [
      [`2130706433:${p}`, "/tunnel-number"],
      [`[::ffff:127.0.0.1]:${p}`, "/tunnel-mapped"],
      [`0177.0.0.1.:${p}`, "/tunnel-octal-dot"],
    ] as const) {
      const t = tunnelled(authority, path);
      expect(await exchange(t.connect, ANSWERED, t.inside), authority).toMatch(
        new RegExp(`^HTTP/1\\.1 200 [\\s\\S]*upstream ok ${path}`),
      );
    }
    expect(withValue(plain)).toEqual([
      "/abs-dotted",
      "/abs-hex",
      "/tunnel-number",
      "/tunnel-mapped",
      "/tunnel-octal-dot",
    ]);
    // recorded under the address the proxy connected to, in one form
    expect(new Set(records.filter((r) => r.port === p).map((r) => r.host))).toEqual(new Set(["127.0.0.1"]));
  });

  it("over TLS: declared as [::ffff:7f00:1], a client of https://127.0.0.1 gets a leaf for the address and the value", async () => {
    const agent = new ProxyAgent({
      uri: proxy.url,
      requestTls: { ca: readFileSync(caCertPath(stateDir), "utf8") },
    });
    try {
      const r = await request(`https://127.0.0.1:${tls.port}/tls`, {
        dispatcher: agent,
        headers: { authorization: `Bearer ${PLACEHOLDER}` },
      });
      expect(r.statusCode).toBe(200);
      expect(await r.body.text()).toBe("upstream ok /tls");
    } finally {
      await agent.close();
    }
    expect(withValue(tls)).toEqual(["/tls"]);
  });

  it("over TLS to IPv6: declared as [0:0:0:0:0:0:0:1], a client of https://[::1] gets a leaf for ::1 and the value", async () => {
    // (the holder refused a leaf for a bare IPv6 host before: HTTPS to one was tunnelled unread)
    const agent = new ProxyAgent({
      uri: proxy.url,
      requestTls: { ca: readFileSync(caCertPath(stateDir), "utf8") },
    });
    try {
      const r = await request(`https://[::1]:${v6Port}/tls-v6`, {
        dispatcher: agent,
        headers: { authorization: `Bearer ${PLACEHOLDER}` },
      });
      expect(r.statusCode).toBe(200);
      expect(await r.body.text()).toBe("v6 ok /tls-v6");
    } finally {
      await agent.close();
    }
    expect(v6Seen).toEqual([`Bearer ${SECRET}`]);
  });

  it("a lookalike is refused before anything is sent: a name resolving there, another address, an address in a name, userinfo, a second dot", async () => {
    const p = plain.port;
    const otherPort = p + 1 === tls.port ? p + 2 : p + 1;
    const before = plain.received.length;
    const refused = async (text: string, status: number) =>
      expect(await exchange(text, /\r\n\r\n/), text.split("\r\n")[0]).toMatch(
        new RegExp(`^HTTP/1\\.1 ${status} `),
      );
    for (const authority of [
      `localhost:${p}`, // a name, even one that resolves to the declared address
      `127.0.0.1.nip.io:${p}`,
      `7f000001.nip.io:${p}`,
      `127.0.0.2:${p}`,
      `[::1]:${p}`,
      `[::127.0.0.1]:${p}`, // IPv4-compatible, not IPv4-mapped: another address
      `127.1:${otherPort}`, // the declared address on a port not declared
    ])
      await refused(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`, 403);
    for (const authority of [
      `127.0.0.1..:${p}`,
      `127.0.0.1@evil.example:${p}`,
      `evil.example@127.0.0.1:${p}`,
    ])
      await refused(`CONNECT ${authority} HTTP/1.1\r\nHost: x\r\n\r\n`, 400);
    // absolute-form: the URL's host decides, not what comes before an @ nor the Host header
    await refused(absolute(`http://127.0.0.1:${p}@evil.example/`, "evil.example"), 403);
    await refused(absolute(`http://evil.example:${p}/`, `127.0.0.1:${p}`), 403);
    await refused(absolute(`http://127.0.0.1.evil.example:${p}/`, `127.0.0.1.evil.example:${p}`), 403);
    expect(plain.received.length).toBe(before);
  });

  it("inside a tunnel to the declared address, a Host that names a lookalike gets no value (421)", async () => {
    const p = plain.port;
    const before = plain.received.length;
    for (const host of [`localhost:${p}`, `127.0.0.1.evil.example:${p}`, `127.0.0.2:${p}`]) {
      const t = tunnelled(`127.0.0.1:${p}`, "/misdirected", host);
      expect(await exchange(t.connect, ANSWERED, t.inside), host).toMatch(/^HTTP\/1\.1 421 /);
    }
    expect(plain.received.length).toBe(before);
    expect(withValue(plain)).not.toContain("/misdirected");
  });
});
