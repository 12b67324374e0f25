#!/usr/bin/env node
// Audit log benchmark (standalone; needs `npm run build` first).
//
//   node bench/audit.mjs [--records N] [--rounds R] [--dir DIR]
//
// Durable appends/s — one writer, then four processes — against raw SQLite inserts
// of the same byte size with the same durability (WAL, synchronous=FULL, one
// transaction per row), measured in the same run, rounds interleaved; and chain
// verification records/s against raw SHA-256 over the same bytes, one digest per
// record. Every figure is the median of the rounds. Use a DIR on the disk you care
// about: fsync dominates the append figures.

import { spawn } from "node:child_process";
import { hash, randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(pathToFileURL(join(root, "dist", p)).href);

const SAMPLE_EVENT = {
  type: "tool_called",
  run: "01JQ7R1ZC2M7W1DXQ8Z2K9V4B6",
  serverLabel: "inventory-local",
  requestId: 42,
  tool: "inventory_adjust",
  fingerprint: "sha256:9e4c1f6a0d3b7c2e8f5a4b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e",
  epoch: "01JQ7R4S4S0QJ7GZP1S2X3Y4Z5",
  revision: 12,
  grant: "01JQ7R5N9D3F2G1H0J8K7M6P5Q",
  argumentsDigest: "sha256:71af0c3e9b8d7f6e5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291807f6e",
};

// ---- child processes ------------------------------------------------------

async function child(kind, dir, count) {
  const { openStore } = await dist("store/db.js");
  const db = openStore(dir);
  let work;
  if (kind === "audit") {
    const { AuditLog } = await dist("audit/index.js");
    const log = AuditLog.open(db, dir);
    work = (i) => log.append({ ...SAMPLE_EVENT, requestId: i });
  } else {
    const size = Number(process.argv[6]);
    const insert = db.prepare("INSERT INTO raw_rows (record) VALUES (?)");
    work = () => insert.run(randomBytes(size));
  }
  process.stdout.write("ready\n");
  await new Promise((r) => process.stdin.once("data", r));
  const start = performance.timeOrigin + performance.now();
  for (let i = 0; i < count; i++) work(i);
  const end = performance.timeOrigin + performance.now();
  process.stdout.write(`${JSON.stringify({ start, end })}\n`);
  db.close();
  process.exit(0);
}

/** Starts n children, lets them all open the store, says go, returns appends/s over the whole span. */
async function multiProcess(kind, dir, n, count, extra = []) {
  const script = fileURLToPath(import.meta.url);
  const kids = Array.from({ length: n }, () => {
    const k = spawn(process.execPath, [script, "--child", kind, dir, String(count), ...extra.map(String)], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    k.out = "";
    k.ready = new Promise((onReady) => {
      k.stdout.setEncoding("utf8");
      k.stdout.on("data", (d) => {
        k.out += d;
        if (k.out.startsWith("ready\n")) onReady();
      });
    });
    k.done = new Promise((res, rej) =>
      k.on("exit", (c) => (c === 0 ? res() : rej(new Error(`child exited ${c}`)))),
    );
    return k;
  });
  await Promise.all(kids.map((k) => k.ready));
  for (const k of kids) k.stdin.write("go\n");
  await Promise.all(kids.map((k) => k.done));
  const spans = kids.map((k) => JSON.parse(k.out.trim().split("\n").at(-1)));
  const ms = Math.max(...spans.map((r) => r.end)) - Math.min(...spans.map((r) => r.start));
  return (n * count) / (ms / 1000);
}

// ---- measurements ---------------------------------------------------------

async function main() {
  const { values } = parseArgs({
    options: {
      records: { type: "string", default: "2000" },
      rounds: { type: "string", default: "3" },
      dir: { type: "string", default: join(root, ".bench-tmp", `audit-${process.pid}`) },
    },
  });
  const N = Number(values.records);
  const rounds = Number(values.rounds);
  const base = resolve(values.dir);
  process.env.PORTCULLIS_INSECURE_TEST_KDF = "1"; // the keyring's cost is not what is measured
  const { openStore } = await dist("store/db.js");
  const { initKeyring } = await dist("keyring/keyring.js");
  const audit = await dist("audit/index.js");

  let fresh = 0;
  const freshDir = async (keyring) => {
    const d = join(base, String(fresh++));
    mkdirSync(d, { recursive: true });
    if (keyring) await initKeyring(d, "bench passphrase");
    return d;
  };

  // Size of one record, so the raw rows carry the same bytes.
  const probeDir = await freshDir(true);
  const probeDb = openStore(probeDir);
  audit.AuditLog.open(probeDb, probeDir).append(SAMPLE_EVENT);
  const size = [...audit.storedRecords(probeDb)][0].length;
  probeDb.close();

  const rawDir = async () => {
    const d = await freshDir(false);
    const db = openStore(d);
    db.exec("CREATE TABLE raw_rows (id INTEGER PRIMARY KEY, record BLOB NOT NULL)");
    db.close();
    return d;
  };
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const rows = [];
  const measure = async (label, rawRun, auditRun, target) => {
    const raw = [];
    const ours = [];
    for (let r = 0; r < rounds; r++) {
      raw.push(await rawRun());
      ours.push(await auditRun());
    }
    rows.push({ label, ours: median(ours), raw: median(raw), target });
  };

  await measure(
    `durable appends/s, 1 writer (${N} records)`,
    async () => multiProcess("raw", await rawDir(), 1, N, [size]),
    async () => multiProcess("audit", await freshDir(true), 1, N),
    0.8,
  );
  const per = Math.ceil(N / 4);
  await measure(
    `durable appends/s, 4 processes (4 x ${per})`,
    async () => multiProcess("raw", await rawDir(), 4, per, [size]),
    async () => multiProcess("audit", await freshDir(true), 4, per),
    0.8,
  );

  // Group commit, for reference: appendMany of 16 events per transaction.
  {
    const d = await freshDir(true);
    const db = openStore(d);
    const log = audit.AuditLog.open(db, d);
    const batch = Array.from({ length: 16 }, (_, i) => ({ ...SAMPLE_EVENT, requestId: i }));
    const t = performance.now();
    for (let i = 0; i < N; i += 16) log.appendMany(batch);
    const rate = (Math.ceil(N / 16) * 16) / ((performance.now() - t) / 1000);
    db.close();
    rows.push({ label: "  (appendMany, 16 per commit)", ours: rate, raw: rows[0].raw, target: null });
  }

  // Verification: a larger log, built with group commit.
  const V = Math.max(N * 10, 20000);
  const vDir = await freshDir(true);
  const vDb = openStore(vDir);
  {
    const log = audit.AuditLog.open(vDb, vDir);
    const batch = Array.from({ length: 500 }, (_, i) => ({ ...SAMPLE_EVENT, requestId: i }));
    for (let i = 0; i < V; i += 500) log.appendMany(batch);
  }
  const records = [...audit.storedRecords(vDb)];
  const exportText = [...audit.exportRecords(vDb)].join("\n") + "\n";
  writeFileSync(join(vDir, "export.jsonl"), exportText);
  const rawHash = () => {
    const t = performance.now();
    for (const r of records) hash("sha256", r, "hex");
    return records.length / ((performance.now() - t) / 1000);
  };
  const readAndHash = () => {
    const t = performance.now();
    let n = 0;
    for (const r of vDb.prepare("SELECT record FROM audit_records ORDER BY seq").pluck().iterate()) {
      hash("sha256", r, "hex");
      n++;
    }
    return n / ((performance.now() - t) / 1000);
  };
  const timed = (f) => {
    const t = performance.now();
    const res = f();
    if (!res.ok) throw new Error(`verify failed: ${res.problem}`);
    return res.records / ((performance.now() - t) / 1000);
  };
  await measure(
    `verify records/s, store (${records.length} records)`,
    async () => rawHash(),
    async () => timed(() => audit.verifyChain(audit.storedRecords(vDb))),
    0.5,
  );
  await measure(
    "  (same, against SQLite read + SHA-256)",
    async () => readAndHash(),
    async () => timed(() => audit.verifyChain(audit.storedRecords(vDb))),
    null,
  );
  await measure(
    `verify records/s, export file (${records.length} lines)`,
    async () => rawHash(),
    async () => timed(() => audit.verifyExport(exportText.split("\n"))),
    0.5,
  );
  vDb.close();

  const fmt = (x) => Math.round(x).toLocaleString("en-US");
  const table = [
    ["measure", "portcullis", "baseline", "ratio", "target"],
    ...rows.map((r) => [
      r.label,
      fmt(r.ours),
      fmt(r.raw),
      (r.ours / r.raw).toFixed(2),
      r.target ? `>= ${r.target}` : "",
    ]),
  ];
  const w = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  console.log(`record: ${size} bytes; median of ${rounds} rounds; dir ${base}`);
  console.log(
    "baselines: raw SQLite rows of the same size (WAL, synchronous=FULL, one transaction per row);",
  );
  console.log("           raw SHA-256 over each record's bytes, already in memory (one digest per record)");
  for (const row of table)
    console.log(row.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join("  "));
  rmSync(base, { recursive: true, force: true });
}

if (process.argv[2] === "--child") {
  await child(process.argv[3], process.argv[4], Number(process.argv[5]));
} else {
  await main();
}
