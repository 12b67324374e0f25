#!/usr/bin/env node
// Egress proxy benchmark (standalone; needs `npm run build` first; bench/run.mjs runs it too).
//
//   node bench/egress.mjs [--requests N] [--rounds R]
//
// A released HTTPS request through the egress proxy against the same request sent direct, both
// on kept-alive connections (undici: a ProxyAgent's CONNECT tunnel, an Agent's pooled socket),
// to an HTTPS upstream on loopback. Through the proxy, each request is read (TLS terminated with
// a leaf the vault holder minted), its placeholder replaced after asking the holder (a Unix socket
// round trip per request, as in a gateway), and sent on over the proxy's own kept-alive pool.
// The upstream, the holder and the proxy each run in a process of their own, as in use; this
// process is the client (the MCP server's side).
// Reports p50 and p99 per request (ms) and the ratio of the p50s. Target: ratio ≤ 1.5.
import "reflect-metadata";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:https";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { Agent, ProxyAgent, request } from "undici";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(pathToFileURL(join(root, "dist", p)).href);
const { values } = parseArgs({
  options: { requests: { type: "string", default: "2000" }, rounds: { type: "string", default: "3" } },
});
const N = Number(values.requests);
const ROUNDS = Number(values.rounds);

const { createCa, mintLeaf } = await dist("vault/egress/certs.js");
const role = process.env.BENCH_EGRESS_ROLE;
const given = role ? JSON.parse(process.env.BENCH_EGRESS_CONFIG ?? "{}") : null;
const ready = (v) => process.stdout.write(`${JSON.stringify(v)}\n`);

// Each part in its own process, as in use: the upstream, the vault holder, the gateway's proxy.
if (role === "upstream") {
  const leaf = await mintLeaf(
    { certPem: given.caPem, keyPkcs8: Buffer.from(given.caKey, "base64") },
    "127.0.0.1",
  );
  const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    res.end(req.headers.authorization === "Bearer bench-secret-value" ? "released" : "not released");
  });
  server.listen(0, "127.0.0.1", () => ready({ port: server.address().port }));
} else if (role === "holder") {
  const { runHolder, holderSocketPath } = await dist("vault/holder.js");
  await runHolder({
    socketPath: holderSocketPath(given.stateDir),
    until: new Date(Date.now() + 3600_000),
    secrets: new Map([["bench", { value: "bench-secret-value", deliver: "http", hosts: [given.host] }]]),
    ca: { certPem: given.caPem, keyPkcs8: Buffer.from(given.caKey, "base64") },
  });
  ready({});
} else if (role === "proxy") {
  const { startEgressProxy } = await dist("vault/egress/proxy.js");
  const proxy = await startEgressProxy({
    stateDir: given.stateDir,
    credentials: [{ env: "API_KEY", secret: "bench", deliver: "http", hosts: [given.host] }],
    mode: "record",
    calls: () => ({ epoch: "E", inFlight: [{ callId: "1", epoch: "E", scopes: ["bench"] }] }),
    extraCa: given.upstreamCa,
    onRecord: () => {},
    log: { info() {}, warn() {}, debug() {}, status() {} },
  });
  ready({ url: proxy.url });
}
if (role) await new Promise(() => {}); // a part runs until the bench kills it

const children = [];
function part(name, config) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], {
    env: { ...process.env, BENCH_EGRESS_ROLE: name, BENCH_EGRESS_CONFIG: JSON.stringify(config) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout.once("data", (d) => resolve(JSON.parse(d.toString())));
    child.once("exit", (code) => reject(new Error(`the ${name} exited (${code})`)));
  });
}

const stateDir = mkdtempSync(join(tmpdir(), "portcullis-bench-egress-"));
const upstreamCa = await createCa("bench upstream CA");
const localCa = await createCa("bench local CA");
const key = (ca) => Buffer.from(ca.keyPkcs8).toString("base64");
const { port } = await part("upstream", { caPem: upstreamCa.certPem, caKey: key(upstreamCa) });
const host = `127.0.0.1:${port}`;
await part("holder", { stateDir, host, caPem: localCa.certPem, caKey: key(localCa) });
const proxy = await part("proxy", { stateDir, host, upstreamCa: upstreamCa.certPem });

const direct = new Agent({ connect: { ca: upstreamCa.certPem }, connections: 1 });
const viaProxy = new ProxyAgent({ uri: proxy.url, requestTls: { ca: localCa.certPem }, connections: 1 });
const url = `https://${host}/item`;

let seen = 0;
async function one(dispatcher, auth) {
  const t = process.hrtime.bigint();
  const r = await request(url, { dispatcher, headers: { authorization: auth } });
  if ((await r.body.text()) === "released") seen++;
  return Number(process.hrtime.bigint() - t) / 1e6;
}

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

const results = { direct: [], proxy: [] };
// warm both paths (TLS handshakes, the leaf, the pools)
for (let i = 0; i < 50; i++) {
  await one(direct, "Bearer bench-secret-value");
  await one(viaProxy, "Bearer portcullis-placeholder:bench");
}
seen = 0;
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < N; i++) results.direct.push(await one(direct, "Bearer bench-secret-value"));
  for (let i = 0; i < N; i++) results.proxy.push(await one(viaProxy, "Bearer portcullis-placeholder:bench"));
}
if (seen !== 2 * N * ROUNDS)
  throw new Error(`the upstream saw the value ${seen} times, expected ${2 * N * ROUNDS}`);
const d50 = pct(results.direct, 50);
const p50 = pct(results.proxy, 50);
console.log(`requests: ${N} × ${ROUNDS} rounds each way, one kept-alive connection each`);
console.log(`direct        p50 ${d50.toFixed(3)} ms   p99 ${pct(results.direct, 99).toFixed(3)} ms`);
console.log(
  `egress proxy  p50 ${p50.toFixed(3)} ms   p99 ${pct(results.proxy, 99).toFixed(3)} ms   (value released every request)`,
);
console.log(`ratio (p50)   ${(p50 / d50).toFixed(2)}×   target ≤ 1.5×`);

await direct.close();
await viaProxy.close();
for (const c of children) c.kill();
rmSync(stateDir, { recursive: true, force: true });
