// The egress proxy keeps a value the vault holder released for a call, and uses it again for that
// call's later requests while the holder's generation is unchanged. It read that generation from
// the holder socket file's modification time alone: another process of the user that sets the
// file's time back after a `vault set` (one `touch -d`) made the proxy go on sending the retired
// value for the rest of the call, though the holder holds, and would release, the new one. The
// holder now also tells the connections it released values on that a secret was stored or
// removed, which a file's time cannot undo. In-process proxy and holder, a real HTTPS upstream.
import "reflect-metadata";
import { once } from "node:events";
import { statSync, utimesSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { ProxyAgent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CaMaterial, createCa, mintLeaf } from "../../src/vault/egress/certs.js";
import { type CallInFlight, type EgressProxy, startEgressProxy } from "../../src/vault/egress/proxy.js";
import { askHolder, holderSocketPath, runHolder } from "../../src/vault/holder.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";

const SECRET = "touch-secret-original-3e9a";
const PLACEHOLDER = "portcullis-placeholder:api";
const quiet = { info() {}, warn() {}, debug() {}, status() {} };

let stateDir: string;
let localCa: CaMaterial;
let upstream: Server;
let host: string;
let proxy: EgressProxy;
let holder: { stop(reason: "locked"): void };
let window: { epoch: string | null; inFlight: CallInFlight[] } = { epoch: null, inFlight: [] };
/** the Authorization the upstream got, by path */
const got = new Map<string, string>();

beforeAll(async () => {
  stateDir = newStateDir();
  localCa = await createCa("touch local CA");
  const upstreamCa = await createCa("touch upstream CA");
  const leaf = await mintLeaf(upstreamCa, "127.0.0.1");
  upstream = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    req.resume();
    // what it got is kept here, not echoed: the proxy takes a released value out of an answer
    req.on("end", () => {
      got.set(req.url ?? "", req.headers.authorization ?? "-");
      res.end("ok");
    });
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  host = `127.0.0.1:${(upstream.address() as { port: number }).port}`;
  holder = await runHolder({
    socketPath: holderSocketPath(stateDir),
    until: new Date(Date.now() + 3600_000),
    secrets: new Map([["api", { value: SECRET, deliver: "http", hosts: [host] }]]),
    ca: localCa,
  });
  proxy = await startEgressProxy({
    stateDir,
    credentials: [{ env: "API_KEY", secret: "api", deliver: "http", hosts: [host] }],
    mode: "record",
    calls: () => window,
    extraCa: upstreamCa.certPem,
    timeoutMs: 5000,
    onRecord: () => {},
    log: quiet,
  });
});

afterAll(async () => {
  await proxy?.close();
  holder?.stop("locked");
  upstream?.closeAllConnections();
  upstream?.close();
  removeDir(stateDir);
});

async function get(d: ProxyAgent, path: string): Promise<string> {
  const r = await request(`https://${host}${path}`, {
    dispatcher: d,
    headers: { authorization: `Bearer ${PLACEHOLDER}` },
  });
  expect(await r.body.text()).toBe("ok");
  return `${path} ${got.get(path)}`;
}

const put = (value: string) =>
  askHolder(stateDir, { op: "put", scope: "api", deliver: "http", hosts: [host], value });
const mark = () => statSync(holderSocketPath(stateDir)).mtimeMs / 1000;

describe("a value the proxy keeps for a call, and the secret stored again", () => {
  it("two rotations within a second: the call's next request carries the last value", async () => {
    window = { epoch: "E1", inFlight: [{ callId: "1", epoch: "E1", scopes: ["api"], key: "k1" }] };
    const d = new ProxyAgent({ uri: proxy.url, requestTls: { ca: localCa.certPem }, connections: 1 });
    expect(await get(d, "/first")).toBe(`/first Bearer ${SECRET}`);
    expect(await put("touch-rotated-once-51c0")).toEqual({ ok: true });
    expect(await put("touch-rotated-twice-7d22")).toEqual({ ok: true });
    expect(await get(d, "/after-two")).toBe("/after-two Bearer touch-rotated-twice-7d22");
    await d.close();
  });

  it("the socket file's time set back after a rotation: the retired value is not sent again", async () => {
    window = { epoch: "E1", inFlight: [{ callId: "2", epoch: "E1", scopes: ["api"], key: "k2" }] };
    const d = new ProxyAgent({ uri: proxy.url, requestTls: { ca: localCa.certPem }, connections: 1 });
    expect(await put(SECRET)).toEqual({ ok: true });
    expect(await get(d, "/kept")).toBe(`/kept Bearer ${SECRET}`);
    const before = mark();
    expect(await put("touch-rotated-then-touched-a8f4")).toEqual({ ok: true });
    expect(mark()).not.toBe(before);
    // another process of the user: `touch -d @before vault.sock`
    utimesSync(holderSocketPath(stateDir), before, before);
    expect(mark()).toBe(before);
    expect(await get(d, "/touched")).toBe("/touched Bearer touch-rotated-then-touched-a8f4");
    // removed, and the time set back again: nothing is sent
    const again = mark();
    expect(await askHolder(stateDir, { op: "forget", scope: "api" })).toEqual({ ok: true });
    utimesSync(holderSocketPath(stateDir), again, again);
    expect(await get(d, "/forgotten")).toBe(`/forgotten Bearer ${PLACEHOLDER}`);
    await d.close();
  });
});
