// Measurement (not a benchmark of the suite, not a test): how long a real gateway's event loop is
// held by a re-list that narrows the input schema of every one of 10,000 tools (a maxLength added
// to each of 30 properties: 12 MB of catalog, within every limit of a fetch), the case of
// test/catalog/hostile-narrowed-schemas.test.ts at the gateway.
//
// The gateway (dist/, `npm run build` first) runs in front of the catalog fixture, 500 tools a
// page. Once the first catalog is served, the fixture's file is replaced by the narrowed catalog:
// the fixture says list_changed, the gateway re-lists, records the new revision (its diff, the
// audit record) and tells the client. Meanwhile the client pings the gateway every 20 ms; the
// longest a ping waited for its answer is the time the event loop was held.
//
//   npm run build && node bench/relist-large.mjs
//   RELIST_CPU_PROF=/tmp/prof node bench/relist-large.mjs   (the gateway writes a .cpuprofile there)
//   RELIST_CLI=/tmp/before/cli/main.cjs node bench/relist-large.mjs   (another build's gateway)
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = join(dirname(fileURLToPath(import.meta.url)), "..");
// another build to compare with (the dist/cli/main.cjs of a copy of dist/ made before a change)
const CLI = process.env.RELIST_CLI ?? join(REPO, "dist", "cli", "main.cjs");
const N = Number(process.env.RELIST_TOOLS ?? 10_000);

const schema = (narrow) => ({
  type: "object",
  properties: Object.fromEntries(
    Array.from({ length: 30 }, (_, k) => [
      `p${k}`,
      narrow ? { type: "string", maxLength: 10 } : { type: "string" },
    ]),
  ),
});
const tools = (narrow) =>
  Array.from({ length: N }, (_, i) => ({
    name: `t${String(i).padStart(5, "0")}`,
    inputSchema: schema(narrow),
  }));

const dir = mkdtempSync(join(tmpdir(), "portcullis-relist-large-"));
const catalog = join(dir, "tools.json");
const write = (narrow) => {
  writeFileSync(`${catalog}.tmp`, JSON.stringify(tools(narrow)));
  renameSync(`${catalog}.tmp`, catalog);
};
write(false);

// a state dir as `portcullis init` leaves it (the cheap test KDF, a passphrase from a file)
const passFile = join(dir, "pass");
writeFileSync(passFile, "relist large\n", { mode: 0o600 });
const init = spawnSync(
  process.execPath,
  [join(REPO, "dist", "cli", "main.cjs"), "init", "--state-dir", join(dir, "state")],
  {
    env: { ...process.env, PORTCULLIS_PASSPHRASE_FILE: passFile, PORTCULLIS_INSECURE_TEST_KDF: "1" },
    encoding: "utf8",
  },
);
if (init.status !== 0) throw new Error(`portcullis init failed (${init.status}): ${init.stderr}`);

const prof = process.env.RELIST_CPU_PROF;
const gw = spawn(
  process.execPath,
  [
    ...(prof ? ["--cpu-prof", `--cpu-prof-dir=${prof}`] : []),
    CLI,
    "run",
    "--state-dir",
    join(dir, "state"),
    "--label",
    "large",
    "--approval",
    "none",
    "--",
    process.execPath,
    join(REPO, "test", "fixtures", "servers", "catalog.mjs"),
  ],
  {
    env: { ...process.env, FIXTURE_CATALOG: catalog, FIXTURE_PAGE_SIZE: "500" },
    stdio: ["pipe", "pipe", "pipe"],
  },
);
let stderr = "";
gw.stderr.on("data", (d) => {
  stderr += d;
});
gw.on("exit", (code) => {
  if (waiting.size > 0) {
    console.error(`the gateway exited (${code}) with requests unanswered; stderr:\n${stderr}`);
    process.exit(1);
  }
});

const waiting = new Map();
const seen = [];
let buf = "";
gw.stdout.on("data", (d) => {
  buf += d;
  for (let nl = buf.indexOf("\n"); nl !== -1; nl = buf.indexOf("\n")) {
    const line = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    if (!line.trim()) continue;
    const m = JSON.parse(line);
    if (m.id !== undefined && waiting.has(m.id)) {
      waiting.get(m.id)(m);
      waiting.delete(m.id);
    } else seen.push(m);
  }
});
let nextId = 1;
const request = (method, params = {}) =>
  new Promise((resolve) => {
    const id = nextId++;
    waiting.set(id, resolve);
    gw.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
  });
const until = async (what, ms) => {
  const end = Date.now() + ms;
  while (!what()) {
    if (Date.now() > end) throw new Error(`timed out; stderr:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

await request("initialize", {
  protocolVersion: "2025-11-25",
  capabilities: {},
  clientInfo: { name: "relist-large", version: "1" },
});
gw.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
let t0 = Date.now();
const first = await request("tools/list");
console.log(`first catalog: ${first.result.tools.length} tools served after ${Date.now() - t0} ms`);

// the gateway's CPU time (all its threads, user and system), from /proc (Linux)
const cpuMs = () => {
  try {
    const f = readFileSync(`/proc/${gw.pid}/stat`, "utf8").split(") ")[1].split(" ");
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // clock ticks (USER_HZ = 100)
  } catch {
    return Number.NaN;
  }
};
let worst = 0;
let pinging = true;
const pinger = (async () => {
  while (pinging) {
    const at = performance.now();
    await request("ping");
    worst = Math.max(worst, performance.now() - at);
    await new Promise((r) => setTimeout(r, 20));
  }
})();
t0 = Date.now();
const cpu0 = cpuMs();
write(true);
await until(() => seen.some((m) => m.method === "notifications/tools/list_changed"), 600_000);
const told = Date.now() - t0;
const cpu = cpuMs() - cpu0;
pinging = false;
await pinger;
const after = await request("tools/list");
const narrowed = after.result.tools.every((t) => t.inputSchema.properties.p0.maxLength === 10);
console.log(
  `re-list: client told after ${told} ms (gateway CPU ${cpu} ms); longest ping ${Math.round(worst)} ms; ${after.result.tools.length} tools, narrowed: ${narrowed}`,
);
gw.stdin.end();
await new Promise((r) => gw.on("exit", r));
rmSync(dir, { recursive: true, force: true });
