// The half-close of hostile-egress-half-close.test.ts inside a TLS tunnel, the proxy terminating
// TLS with the leaf a real vault holder mints (started by `unlock`): the client sends its request,
// then `end()` (TLS's close_notify and the FIN), and reads on. The answer, which the upstream (TLS
// too) writes only once the client's end went out, reaches the client, the proxy then ends the
// tunnel, and the request is recorded `forwarded`. Before, the tunnel stayed open after the answer
// (the request had not asked to close).
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import {
  createServer as createTlsServer,
  type Server,
  type TLSSocket,
  connect as tlsConnect,
} from "node:tls";
import { afterAll, beforeAll, expect, it } from "vitest";
import { caCertPath } from "../../src/vault/egress/ca.js";
import { createCa, mintLeaf } from "../../src/vault/egress/certs.js";
import { type EgressProxy, type EgressRecord, startEgressProxy } from "../../src/vault/egress/proxy.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const quiet = { info() {}, warn() {}, debug() {}, status() {} };
/** How long an awaited event may take before the test says which never came (no duration is asserted). */
const BOUND = 5000;

let stateDir: string;
let proxy: EgressProxy;
let upstream: Server;
let host: string;
const records: EgressRecord[] = [];
/** the connection each request came on, by path */
const arrived = new Map<string, TLSSocket>();

beforeAll(async () => {
  stateDir = newStateDir();
  const ca = await createCa("half-close upstream CA");
  const leaf = await mintLeaf(ca, "127.0.0.1");
  // never answers by itself: the test writes the answer
  upstream = createTlsServer({ cert: leaf.certPem, key: leaf.keyPem }, (s) => {
    s.on("error", () => {});
    let got = "";
    s.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      const end = got.indexOf("\r\n\r\n");
      if (end < 0) return;
      arrived.set(got.split(" ")[1] ?? "/", s);
      got = got.slice(end + 4);
    });
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  host = `127.0.0.1:${(upstream.address() as { port: number }).port}`;
  const set = await runCli(["vault", "set", "inventory-api", "--from-stdin", "--host", host], {
    stateDir,
    env: passphraseEnv(),
    input: "half-close-value-5e0a",
  });
  expect(set.code, set.stderr).toBe(0);
  const unlock = await runCli(["unlock"], { stateDir, env: passphraseEnv() });
  expect(unlock.code, unlock.stderr).toBe(0);
  proxy = await startEgressProxy({
    stateDir,
    credentials: [{ env: "API_KEY", secret: "inventory-api", deliver: "http", hosts: [host] }],
    mode: "record",
    calls: () => ({ epoch: "E1", inFlight: [] }),
    extraCa: ca.certPem,
    timeoutMs: BOUND,
    onRecord: (r) => records.push(r),
    log: quiet,
  });
}, 30_000);

afterAll(async () => {
  await proxy?.close();
  for (const s of arrived.values()) s.destroy();
  upstream?.close();
  if (stateDir) await runCli(["lock"], { stateDir });
  removeDir(stateDir);
});

it("a TLS client that ends after its request gets the answer sent after its end, then the tunnel ends; forwarded", async () => {
  const raw = connect(proxy.port, "127.0.0.1");
  raw.on("error", () => {});
  await once(raw, "connect");
  raw.write(`CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
  const [established] = (await once(raw, "data")) as [Buffer];
  expect(established.toString("latin1")).toBe("HTTP/1.1 200 Connection Established\r\n\r\n");
  const s = tlsConnect({ socket: raw, host: "127.0.0.1", ca: readFileSync(caCertPath(stateDir), "utf8") });
  s.on("error", () => {});
  await once(s, "secureConnect");
  let read = "";
  s.on("data", (d: Buffer) => {
    read += d.toString("latin1");
  });
  const ended = new Promise<void>((resolve) => {
    s.once("end", resolve);
    s.once("close", resolve);
  });
  // asks to keep the connection: only the client's end can end the tunnel
  s.write(`GET /late HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
  const up = await waitFor(() => arrived.get("/late"), BOUND, "the request at the upstream");
  s.end();
  await once(s, "finish");
  up.write("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate");
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    ended,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error("the proxy's end of the tunnel: never came")), BOUND);
    }),
  ]).finally(() => clearTimeout(timer));
  expect(read).toBe("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate");
  await waitFor(() => records.length > 0 || null, BOUND, "the record");
  expect(records.map((r) => [r.scheme, r.method, r.outcome, r.status])).toEqual([
    ["https", "GET", "forwarded", 200],
  ]);
});
