#!/usr/bin/env node
// Egress proxy benchmark (standalone; needs `npm run build` first; bench/run.mjs runs it too).
//
//   node bench/egress.mjs [--requests N] [--rounds R]
//
// A released HTTPS request through the egress proxy against the same request sent direct, both
// on kept-alive connections (undici: a ProxyAgent's CONNECT tunnel, an Agent's pooled socket),
// to an HTTPS upstream on loopback. Through the proxy, each request is read (TLS terminated with
// a leaf the vault holder minted), its placeholder replaced with the value the holder released for
// the call in flight, and sent on over the proxy's own kept-alive TLS connection to the upstream.
// The upstream, the holder and the proxy each run in a process of their own, as in use; this
// process is the client (the MCP server's side).
//
// Beside them, two floors measured in the same rounds, through the same kind of CONNECT tunnel:
//   tcp relay   a CONNECT tunnel that passes bytes untouched (any proxy process costs this much)
//   tls relay   a CONNECT tunnel that terminates TLS with the same kind of leaf and opens its own
//               TLS connection upstream, passing the decrypted bytes through unread: the floor of
//               any proxy that must read (and so decrypt) the request
//
// Reports, per path, p50 and p99 per request (ms), the p50 of each round, and the CPU time the
// intermediary process spent per request (/proc/PID/schedstat: steadier than wall-clock time on
// a busy machine, since waiting for a core is not counted). Target (issue #13): proxy p50 ≤ 1.5×
// direct p50.
//
// Environment:
//   BENCH_ROUNDS, BENCH_REQUESTS    override --rounds, --requests
//   BENCH_PROFILE_DIR=DIR           run the proxy under `node --cpu-prof` into DIR
//   BENCH_BASE_DIST=DIR             also measure the proxy of another build's dist/ ("proxy (base)")
//   BENCH_PATHS=a,b                 only these paths (direct is always measured)
//   BENCH_EGRESS_RECORD=0           the proxy without the gateway's record of each request (by
//                                   default it writes the `egress` audit events and index, as in use)
import "reflect-metadata";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:https";
import { createServer as createTcpServer, connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { TLSSocket, connect as tlsConnect } from "node:tls";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { Agent, ProxyAgent, request } from "undici";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const distDir = process.env.BENCH_EGRESS_DIST ?? join(root, "dist");
const dist = (p) => import(pathToFileURL(join(distDir, p)).href);
const { values } = parseArgs({
  options: { requests: { type: "string", default: "2000" }, rounds: { type: "string", default: "3" } },
});
const N = Number(process.env.BENCH_REQUESTS ?? values.requests);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? values.rounds);
const TARGET = 1.5;

const { createCa, mintLeaf } = await dist("vault/egress/certs.js");
const role = process.env.BENCH_EGRESS_ROLE;
const given = role ? JSON.parse(process.env.BENCH_EGRESS_CONFIG ?? "{}") : null;
const ready = (v) => process.stdout.write(`${JSON.stringify(v)}\n`);
const caOf = (pem, key) => ({ certPem: pem, keyPkcs8: Buffer.from(key, "base64") });

/** A CONNECT-only proxy whose tunnels `onTunnel(socket, head)` handles (the relay floors). */
function connectProxy(onTunnel) {
  const server = createTcpServer((socket) => {
    socket.setNoDelay(true);
    let buf = Buffer.alloc(0);
    const onData = (d) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      socket.pause();
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      onTunnel(socket, buf.subarray(end + 4));
    };
    socket.on("data", onData);
    socket.on("error", () => socket.destroy());
  });
  server.listen(0, "127.0.0.1", () => ready({ url: `http://127.0.0.1:${server.address().port}` }));
}

// Each part in its own process, as in use: the upstream, the vault holder, the gateway's proxy.
if (role === "upstream") {
  const leaf = await mintLeaf(caOf(given.caPem, given.caKey), "127.0.0.1");
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
    ca: caOf(given.caPem, given.caKey),
  });
  ready({});
} else if (role === "proxy") {
  const { startEgressProxy } = await dist("vault/egress/proxy.js");
  const quiet = { info() {}, warn() {}, debug() {}, status() {} };
  // as in a gateway: every request recorded (an `egress` audit event, the destinations index),
  // each release recorded and learned by the scrubber; BENCH_EGRESS_RECORD=0 leaves that out
  let onRecord = () => {};
  let onReleaseRecord = () => {};
  if (process.env.BENCH_EGRESS_RECORD !== "0") {
    const { openStore } = await dist("store/db.js");
    const { AuditLog } = await dist("audit/index.js");
    const { auditSink } = await dist("gateway/auditSink.js");
    const { EgressRecorder } = await dist("vault/egress/record.js");
    const store = openStore(given.stateDir);
    const events = auditSink(AuditLog.open(store, given.stateDir, { sync: "normal" }), quiet);
    const recorder = new EgressRecorder(store, "bench", events);
    onRecord = (r) => recorder.record(r);
    onReleaseRecord = (r) =>
      events.emit({
        type: "credential_released",
        serverLabel: "bench",
        deliver: "http",
        scopes: [r.scope],
        ...r,
      });
  }
  const released = new Set();
  const proxy = await startEgressProxy({
    stateDir: given.stateDir,
    credentials: [{ env: "API_KEY", secret: "bench", deliver: "http", hosts: [given.host] }],
    mode: "record",
    calls: () => ({ epoch: "E", inFlight: [{ callId: "1", epoch: "E", scopes: ["bench"], key: "1" }] }),
    extraCa: given.upstreamCa,
    onRecord,
    onReleaseRecord,
    onReleased: (_scope, value) => released.add(value),
    log: quiet,
  });
  if (process.env.BENCH_PROFILE_DIR) process.on("SIGTERM", () => process.exit(0)); // writes the profile
  ready({ url: proxy.url });
} else if (role === "tcp-relay") {
  connectProxy((socket, head) => {
    const up = tcpConnect({ host: "127.0.0.1", port: given.port }, () => {
      up.setNoDelay(true);
      if (head.length) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
      socket.resume();
    });
    up.on("error", () => socket.destroy());
  });
} else if (role === "tls-relay") {
  const leaf = await mintLeaf(caOf(given.caPem, given.caKey), "127.0.0.1");
  let session;
  connectProxy((socket, head) => {
    if (head.length) socket.unshift(head);
    const inner = new TLSSocket(socket, { isServer: true, cert: leaf.certPem, key: leaf.keyPem });
    const up = tlsConnect({ host: "127.0.0.1", port: given.port, ca: given.upstreamCa, session });
    up.on("session", (s) => {
      session = s;
    });
    up.setNoDelay(true);
    up.pipe(inner);
    inner.pipe(up);
    socket.resume();
    for (const s of [inner, up, socket])
      s.on("error", () => {
        for (const x of [inner, up, socket]) x.destroy();
      });
  });
}
if (role) await new Promise(() => {}); // a part runs until the bench kills it

const children = [];
function part(name, config, { execArgv = [], env = {} } = {}) {
  const child = spawn(process.execPath, [...execArgv, fileURLToPath(import.meta.url)], {
    env: {
      ...process.env,
      ...env,
      BENCH_EGRESS_ROLE: name,
      BENCH_EGRESS_CONFIG: JSON.stringify(config),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout.once("data", (d) => resolve({ ...JSON.parse(d.toString()), pid: child.pid }));
    child.once("exit", (code) => reject(new Error(`the ${name} exited (${code})`)));
  });
}

/** CPU time (ns) the process has run so far (Linux: /proc/PID/schedstat), null elsewhere. */
function cpuNs(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);
  } catch {
    return null;
  }
}

const stateDir = mkdtempSync(join(tmpdir(), "portcullis-bench-egress-"));
if (process.env.BENCH_EGRESS_RECORD !== "0") {
  // the audit log needs a keyring; its cost is not what is measured
  process.env.PORTCULLIS_INSECURE_TEST_KDF = "1";
  const { initKeyring } = await dist("keyring/keyring.js");
  await initKeyring(stateDir, "bench passphrase");
}
const upstreamCa = await createCa("bench upstream CA");
const localCa = await createCa("bench local CA");
const key = (ca) => Buffer.from(ca.keyPkcs8).toString("base64");
const { port } = await part("upstream", { caPem: upstreamCa.certPem, caKey: key(upstreamCa) });
const host = `127.0.0.1:${port}`;
await part("holder", { stateDir, host, caPem: localCa.certPem, caKey: key(localCa) });
const profileDir = process.env.BENCH_PROFILE_DIR ? resolve(process.env.BENCH_PROFILE_DIR) : null;
const proxyConfig = { stateDir, host, upstreamCa: upstreamCa.certPem };
const only = process.env.BENCH_PATHS ? new Set(process.env.BENCH_PATHS.split(",")) : null;
const wanted = (name) => !only || only.has(name);

const url = `https://${host}/item`;
const SECRET = "Bearer bench-secret-value";
const PLACEHOLDER = "Bearer portcullis-placeholder:bench";
const tunnelled = (u) => new ProxyAgent({ uri: u, requestTls: { ca: localCa.certPem }, connections: 1 });

/** The paths, each with its client dispatcher, the header it sends, and the process between. */
const paths = [
  {
    name: "direct",
    dispatcher: new Agent({ connect: { ca: upstreamCa.certPem }, connections: 1 }),
    auth: SECRET,
  },
];
if (wanted("tcp relay")) {
  const relay = await part("tcp-relay", { port });
  paths.push({
    name: "tcp relay",
    // passes TLS end to end: the client verifies the upstream itself
    dispatcher: new ProxyAgent({ uri: relay.url, requestTls: { ca: upstreamCa.certPem }, connections: 1 }),
    auth: SECRET,
    pid: relay.pid,
  });
}
if (wanted("tls relay")) {
  const relay = await part("tls-relay", {
    port,
    caPem: localCa.certPem,
    caKey: key(localCa),
    upstreamCa: upstreamCa.certPem,
  });
  paths.push({ name: "tls relay", dispatcher: tunnelled(relay.url), auth: SECRET, pid: relay.pid });
}
if (wanted("proxy")) {
  const execArgv = profileDir
    ? ["--cpu-prof", "--cpu-prof-interval", "100", "--cpu-prof-dir", profileDir]
    : [];
  const proxy = await part("proxy", proxyConfig, { execArgv });
  paths.push({
    name: "proxy",
    dispatcher: tunnelled(proxy.url),
    auth: PLACEHOLDER,
    pid: proxy.pid,
    released: true,
  });
}
if (process.env.BENCH_BASE_DIST && wanted("proxy (base)")) {
  const proxy = await part("proxy", proxyConfig, {
    env: { BENCH_EGRESS_DIST: resolve(process.env.BENCH_BASE_DIST) },
  });
  paths.push({
    name: "proxy (base)",
    dispatcher: tunnelled(proxy.url),
    auth: PLACEHOLDER,
    pid: proxy.pid,
    released: true,
  });
}

async function one(path) {
  const t = process.hrtime.bigint();
  const r = await request(url, { dispatcher: path.dispatcher, headers: { authorization: path.auth } });
  const body = await r.body.text();
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (r.statusCode !== 200 || body !== "released")
    throw new Error(`${path.name}: the upstream answered ${r.statusCode} ${JSON.stringify(body)}`);
  return ms;
}

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
const median = (xs) => pct(xs, 50);

// warm every path (TLS handshakes, the leaf, the pools, the release for the call)
for (let i = 0; i < 1000; i++) for (const p of paths) await one(p);
for (const p of paths) Object.assign(p, { all: [], rounds: [], cpu: [] });
for (let round = 0; round < ROUNDS; round++) {
  for (const p of paths) {
    const cpu0 = p.pid ? cpuNs(p.pid) : null;
    const xs = [];
    for (let i = 0; i < N; i++) xs.push(await one(p));
    const cpu1 = p.pid ? cpuNs(p.pid) : null;
    p.all.push(...xs);
    p.rounds.push(median(xs));
    if (cpu0 !== null && cpu1 !== null) p.cpu.push((cpu1 - cpu0) / 1000 / N);
  }
}

const f = (x) => x.toFixed(3);
console.log(`requests: ${N} × ${ROUNDS} rounds per path, in turn; one kept-alive connection per path`);
console.log(
  "path           p50 ms   p99 ms   p50 per round (ms)        cpu µs/request of the process between",
);
for (const p of paths) {
  const cpu = p.cpu.length
    ? `${median(p.cpu).toFixed(0)} (${p.cpu.map((c) => c.toFixed(0)).join(", ")})`
    : "-";
  console.log(
    `${p.name.padEnd(14)} ${f(median(p.all)).padStart(6)}   ${f(pct(p.all, 99)).padStart(6)}   ${p.rounds.map(f).join(", ").padEnd(25)} ${cpu}`,
  );
}
const direct = paths[0];
const ratios = (p) => p.rounds.map((x, i) => x / direct.rounds[i]);
for (const p of paths.slice(1)) {
  const r = ratios(p);
  const verdict = p.released ? `   target ≤ ${TARGET}×: ${median(r) <= TARGET ? "met" : "MISSED"}` : "";
  console.log(
    `ratio ${p.name.padEnd(13)} ${median(r).toFixed(2)}× of direct (rounds ${r.map((x) => x.toFixed(2)).join(", ")}), +${f(median(p.all) - median(direct.all))} ms${verdict}`,
  );
}
const proxy = paths.find((p) => p.name === "proxy");
const tls = paths.find((p) => p.name === "tls relay");
if (proxy && tls)
  console.log(
    `proxy over the tls relay floor: +${f(median(proxy.all) - median(tls.all))} ms p50, +${(median(proxy.cpu) - median(tls.cpu)).toFixed(0)} µs cpu per request`,
  );
console.log(
  `(the proxy released the value in every request: the upstream checked each one; ${process.env.BENCH_EGRESS_RECORD === "0" ? "recording left out" : "each request recorded as in a gateway: egress audit event and index"})`,
);

for (const p of paths) await p.dispatcher.close();
for (const c of children) c.kill();
await new Promise((r) => setTimeout(r, profileDir ? 500 : 0));
rmSync(stateDir, { recursive: true, force: true });
