#!/usr/bin/env node
// Audit log benchmark (standalone; needs `npm run build` first).
//
//   node bench/audit.mjs [--records N] [--rounds R] [--dir DIR]
//
// Durable appends/s — one writer, then four processes — against raw SQLite inserts of rows
// of the same size with the same durability (WAL, synchronous=FULL, one transaction per
// row), measured in the same run with the two interleaved round by round. Ours are measured
// the way the gateway writes: 16 concurrent appends, each resolved once its transaction
// committed, through the gateway's writer (group commit); and also one append at a time,
// where no two appends can share a commit. Then chain verification records/s against raw
// SHA-256 over the same bytes: sha256sum over a file of the records' bytes (and over the export
// file), its wall time, as the identity bench measures it; and, for reference, node's one-shot
// SHA-256 of each record already in memory (SHA-NI, no I/O, no parsing: the floor of any
// per-record hash). Figures are medians over the rounds. fsync dominates the append
// figures: run it on the disk you care about (--dir), on a quiet machine.

import { spawn, spawnSync } from "node:child_process";
import { hash } from "node:crypto";
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** The standard checksum tool: sha256sum (coreutils), else shasum -a 256 (macOS). */
const SHA256SUM =
  spawnSync("sha256sum", ["--version"]).status === 0 ? ["sha256sum"] : ["shasum", "-a", "256"];
const dist = (p) => import(pathToFileURL(join(root, "dist", p)).href);

// A tool_called event as the gateway writes it.
const EVENT = {
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

/**
 * An appender; `append(i)` returns once the record is durable (a promise for "sink").
 *   audit  AuditLog.append: one record, one transaction
 *   sink   the gateway's writer (auditSink.emitDurable): appends that arrive together share a
 *          transaction (group commit); each still resolves only once committed
 *   raw    one INSERT of `size` bytes, autocommit: one row, one transaction
 */
async function appender(kind, dir, size) {
  const { openStore } = await dist("store/db.js");
  const db = openStore(dir);
  if (kind === "audit" || kind === "sink") {
    const { AuditLog } = await dist("audit/index.js");
    const log = AuditLog.open(db, dir);
    if (kind === "audit") return { db, append: (i) => log.append({ ...EVENT, requestId: i }) };
    const { auditSink } = await dist("gateway/auditSink.js");
    const quiet = { info() {}, debug() {}, status() {}, warn: (m) => process.stderr.write(`${m}\n`) };
    const sink = auditSink(log, quiet);
    return { db, append: (i) => sink.emitDurable({ ...EVENT, requestId: i }) };
  }
  db.exec("CREATE TABLE IF NOT EXISTS raw_rows (id INTEGER PRIMARY KEY, record BLOB NOT NULL)");
  const insert = db.prepare("INSERT INTO raw_rows (record) VALUES (?)");
  const row = Buffer.alloc(size, 0x5a);
  return { db, append: () => insert.run(row) };
}

/** `count` appends issued by `writers` concurrent producers, each waiting for its own to be durable. */
async function appendConcurrently(append, count, writers) {
  let next = 0;
  const producer = async () => {
    while (next < count) await append(next++);
  };
  await Promise.all(Array.from({ length: writers }, producer));
}

// ---- child process: node audit.mjs --child KIND DIR COUNT SIZE ---------------------------

async function child(kind, dir, count, size, writers) {
  const { db, append } = await appender(kind, dir, size);
  process.stdout.write("ready\n");
  await new Promise((r) => process.stdin.once("data", r));
  process.stdin.destroy();
  const start = performance.timeOrigin + performance.now();
  if (writers > 1) await appendConcurrently(append, count, writers);
  else for (let i = 0; i < count; i++) append(i);
  const end = performance.timeOrigin + performance.now();
  process.stdout.write(`${JSON.stringify({ start, end })}\n`);
  db.close();
}

/** n processes open the store, then start together; appends/s over the whole span. */
async function processes(kind, dir, n, count, size, writers = 1) {
  const script = fileURLToPath(import.meta.url);
  const kids = Array.from({ length: n }, () => {
    const args = [script, "--child", kind, dir, String(count), String(size), String(writers)];
    const k = spawn(process.execPath, args, {
      stdio: ["pipe", "pipe", "inherit"],
    });
    k.out = "";
    k.ready = new Promise((ready) => {
      k.stdout.setEncoding("utf8").on("data", (d) => {
        k.out += d;
        if (k.out.startsWith("ready\n")) ready();
      });
    });
    k.done = new Promise((ok, fail) => k.on("exit", (c) => (c === 0 ? ok() : fail(new Error(`child ${c}`)))));
    return k;
  });
  await Promise.all(kids.map((k) => k.ready));
  for (const k of kids) k.stdin.end("go\n");
  await Promise.all(kids.map((k) => k.done));
  const spans = kids.map((k) => JSON.parse(k.out.trim().split("\n").at(-1)));
  const ms = Math.max(...spans.map((s) => s.end)) - Math.min(...spans.map((s) => s.start));
  return (n * count) / (ms / 1000);
}

// ---- main ------------------------------------------------------------------------------

async function main() {
  const { values } = parseArgs({
    options: {
      records: { type: "string", default: "2000" },
      rounds: { type: "string", default: "5" },
      dir: { type: "string", default: join(root, ".bench-tmp", `audit-${process.pid}`) },
    },
  });
  const N = Number(values.records);
  const rounds = Number(values.rounds);
  const base = resolve(values.dir);
  process.on("exit", () => rmSync(base, { recursive: true, force: true }));
  process.env.PORTCULLIS_INSECURE_TEST_KDF = "1"; // the keyring's cost is not what is measured
  const { openStore } = await dist("store/db.js");
  const { initKeyring } = await dist("keyring/keyring.js");
  const audit = await dist("audit/index.js");
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const rate = (count, ms) => count / (ms / 1000);
  let dirs = 0;
  const freshDir = async (withKeyring) => {
    const d = join(base, String(dirs++));
    mkdirSync(d, { recursive: true });
    if (withKeyring) await initKeyring(d, "bench passphrase");
    return d;
  };
  const rows = [];

  // The size of one record, so that the raw rows carry as many bytes.
  const probe = await freshDir(true);
  const p = await appender("audit", probe);
  p.append(0);
  const size = [...audit.storedRecords(p.db)][0].length;
  p.db.close();

  // One writer, in this process: blocks of appends, raw, the gateway's writer (16 concurrent
  // appends, group-committed) and one append at a time, alternating.
  const WRITERS = 16;
  {
    const a = await appender("audit", await freshDir(true));
    const g = await appender("sink", await freshDir(true));
    const r = await appender("raw", await freshDir(false), size);
    const block = Math.max(20, Math.floor(N / 20));
    const sets = { raw: [], sink: [], one: [] };
    for (let b = 0; b < rounds * 4; b++) {
      let t = performance.now();
      for (let i = 0; i < block; i++) r.append(i);
      sets.raw.push(rate(block, performance.now() - t));
      t = performance.now();
      await appendConcurrently(g.append, block, WRITERS);
      sets.sink.push(rate(block, performance.now() - t));
      t = performance.now();
      for (let i = 0; i < block; i++) a.append(i);
      sets.one.push(rate(block, performance.now() - t));
    }
    rows.push({
      label: `durable appends/s, 1 writer, ${WRITERS} concurrent (${rounds * 4} x ${block})`,
      ours: median(sets.sink),
      raw: median(sets.raw),
      target: 0.8,
    });
    rows.push({
      label: "  same writer, one append at a time",
      ours: median(sets.one),
      raw: median(sets.raw),
      target: null,
    });
    for (const w of [a, g, r]) w.db.close();
  }

  // Four processes at once, raw and audit alternating.
  {
    const per = Math.ceil(N / 4);
    const sets = { raw: [], sink: [], one: [] };
    for (let round = 0; round < rounds; round++) {
      sets.raw.push(await processes("raw", await freshDir(false), 4, per, size));
      sets.sink.push(await processes("sink", await freshDir(true), 4, per, size, WRITERS));
      sets.one.push(await processes("audit", await freshDir(true), 4, per, size));
    }
    rows.push({
      label: `durable appends/s, 4 processes, ${WRITERS} concurrent each (4 x ${per}, ${rounds} rounds)`,
      ours: median(sets.sink),
      raw: median(sets.raw),
      target: 0.8,
    });
    rows.push({
      label: "  same processes, one append at a time",
      ours: median(sets.one),
      raw: median(sets.raw),
      target: null,
    });
  }

  // Verification of a larger log, built with group commit.
  {
    const V = Math.max(N * 10, 20000);
    const d = await freshDir(true);
    const db = openStore(d);
    const log = audit.AuditLog.open(db, d);
    const batch = Array.from({ length: 500 }, (_, i) => ({ ...EVENT, requestId: i }));
    for (let i = 0; i < V; i += 500) log.appendMany(batch);
    const records = [...audit.storedRecords(db)].map((b) => Buffer.from(b));
    const file = join(d, "export.jsonl");
    writeFileSync(file, `${[...audit.exportRecords(db)].join("\n")}\n`);
    const bytesFile = join(d, "records.bin"); // the records' bytes, one after the other
    writeFileSync(bytesFile, Buffer.concat(records));
    const timeVerify = (f) => {
      const t = performance.now();
      const res = f();
      if (!res.ok) throw new Error(`verify failed: ${res.problem}`);
      return rate(res.records, performance.now() - t);
    };
    const timeHash = (source) => {
      const t = performance.now();
      let n = 0;
      for (const r of source()) {
        hash("sha256", r, "hex");
        n++;
      }
      return rate(n, performance.now() - t);
    };
    // The standard tool over the same bytes: its records/s is records / its wall time.
    const timeSha256sum = (path) => {
      const t = performance.now();
      const r = spawnSync(SHA256SUM[0], [...SHA256SUM.slice(1), path], {
        stdio: ["ignore", "ignore", "pipe"],
      });
      if (r.status !== 0) throw new Error(`${SHA256SUM.join(" ")} failed: ${r.error?.message ?? r.stderr}`);
      return rate(records.length, performance.now() - t);
    };
    const readAll = () => db.prepare("SELECT record FROM audit_records ORDER BY seq").pluck().iterate();
    const sets = { store: [], sumBytes: [], sumExport: [], memory: [], readHash: [], file: [] };
    // The tool's runs first, then ours: spawning a process from this one leaves its memory
    // copy-on-write for a while, which would slow whatever runs here right after it.
    for (let round = 0; round < rounds; round++) {
      sets.sumBytes.push(timeSha256sum(bytesFile));
      sets.sumExport.push(timeSha256sum(file));
    }
    const verifyFile = () => {
      const fd = openSync(file, "r"); // read as `audit verify --file` reads it
      try {
        return audit.verifyExport(audit.exportLines(fd));
      } finally {
        closeSync(fd);
      }
    };
    // One untimed pass of each first: it takes the page faults the spawns above leave behind.
    audit.verifyStore(db);
    verifyFile();
    for (let round = 0; round < rounds; round++) {
      sets.store.push(timeVerify(() => audit.verifyStore(db)));
      sets.file.push(timeVerify(verifyFile));
      sets.memory.push(timeHash(() => records));
      sets.readHash.push(timeHash(readAll));
    }
    const tool = SHA256SUM[0];
    rows.push({
      label: `verify records/s, store (${records.length} records), vs ${tool} of their bytes`,
      ours: median(sets.store),
      raw: median(sets.sumBytes),
      target: 0.5,
    });
    rows.push({
      label: "  same, vs node's SHA-256 of each record, in memory",
      ours: median(sets.store),
      raw: median(sets.memory),
      target: null,
    });
    rows.push({
      label: "  same, vs reading the rows one by one + SHA-256",
      ours: median(sets.store),
      raw: median(sets.readHash),
      target: null,
    });
    rows.push({
      label: `verify records/s, export file, vs ${tool} of the file`,
      ours: median(sets.file),
      raw: median(sets.sumExport),
      target: 0.5,
    });
    db.close();
  }

  const fmt = (x) => Math.round(x).toLocaleString("en-US");
  const table = [
    ["", "portcullis", "baseline", "ratio", "target"],
    ...rows.map((r) => [
      r.label,
      fmt(r.ours),
      fmt(r.raw),
      (r.ours / r.raw).toFixed(2),
      r.target ? `>= ${r.target}` : "",
    ]),
  ];
  const w = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  console.log(`audit record: ${size} bytes; ${rounds} rounds, medians; store in ${base}`);
  console.log(
    "baselines: appends — raw SQLite rows of the same size, WAL, synchronous=FULL, one transaction per row;",
  );
  console.log(
    `           ours    — each append resolves once durable; ${WRITERS} concurrent appends go through the`,
  );
  console.log(
    "                     gateway's writer (src/gateway/auditSink.ts), which commits those that arrive together at once",
  );
  console.log(
    `           verify  — ${SHA256SUM.join(" ")} over the same bytes (the records' bytes in a file; the export file),`,
  );
  console.log(
    "                     its wall time; and node's one-shot SHA-256 of each record already in memory, for reference",
  );
  for (const row of table)
    console.log(row.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join("  "));
}

if (process.argv[2] === "--child") {
  const [kind, dir, count, size, writers] = process.argv.slice(3);
  await child(kind, dir, Number(count), Number(size), Number(writers));
} else {
  await main();
}
