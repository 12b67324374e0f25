#!/usr/bin/env node
// The audit work of one guarded call, in-process (needs `npm run build`): what the gateway's
// writer (src/gateway/auditSink.ts) does for a call's intent (tool_called, with its open-intents
// row) and its result (tool_result, closing the row), with `--audit-sync normal` (no fsync: the
// CPU is what is measured). CPU µs per call (process.cpuUsage) and garbage-collection time, one
// call at a time (c=1: a transaction for the intent, one for the result) and 16 at a time (c=16:
// the 16 intents share a transaction, so do the 16 results); then the parts of one record alone.
//
//   node bench/audit-hot.mjs [--calls N] [--rounds R] [--dist DIR]
// --dist: another build's dist/ (compare before/after in the same run).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "20000" },
    rounds: { type: "string", default: "5" },
    dist: { type: "string", default: join(root, "dist") },
  },
});
const CALLS = Number(values.calls);
const ROUNDS = Number(values.rounds);
const DIST = resolve(values.dist);
/** BENCH_ONLY=1 or 16: only that concurrency (to profile one of them) */
const ONLY = process.env.BENCH_ONLY ?? "";
const dist = (p) => import(pathToFileURL(join(DIST, p)).href);
process.env.PORTCULLIS_INSECURE_TEST_KDF = "1"; // the keyring's cost is not what is measured

const { openStore } = await dist("store/db.js");
const { initKeyring } = await dist("keyring/keyring.js");
const { AuditLog } = await dist("audit/index.js");
const { auditSink } = await dist("gateway/auditSink.js");
const { OpenIntents } = await dist("gateway/openIntents.js");
const { GatewayRecords } = await dist("gateway/records.js");

const dir = mkdtempSync(join(tmpdir(), "portcullis-audit-hot-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
await initKeyring(dir, "bench passphrase");
const db = openStore(dir);
const log = AuditLog.open(db, dir, { sync: "normal" });
const quiet = { info() {}, debug() {}, status() {}, warn: (m) => process.stderr.write(`${m}\n`) };
const sink = auditSink(log, quiet, new OpenIntents(db, "bench-gateway"));
const records = new GatewayRecords(sink, "bench");
records.run = "01JQ7R1ZC2M7W1DXQ8Z2K9V4B6";
const call = {
  tool: "echo",
  definition: null,
  fingerprint: "sha256:9e4c1f6a0d3b7c2e8f5a4b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e",
  epoch: "01JQ7R4S4S0QJ7GZP1S2X3Y4Z5",
  revision: 1,
  effective: null,
  grant: null,
};

let gcMs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcMs += e.duration;
}).observe({ entryTypes: ["gc"] });

/** One call's records as the gateway writes them: the intent (awaited), then the result. */
async function oneCall(i) {
  const args = { message: `ping ${i}` };
  // a call's name as the gateway gives it: the client's id text and the gateway's call key
  const name = { idText: String(i), key: i + 1 };
  await records.toolCalled(name, args, { ...call, effective: args });
  records.toolResult(name, "echo", call.epoch, "ok");
}

async function measure(concurrency) {
  const gc0 = gcMs;
  const cpu0 = process.cpuUsage();
  let next = 0;
  const worker = async () => {
    while (next < CALLS) await oneCall(next++);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  await new Promise((r) => setImmediate(r));
  sink.flush(); // the last results (they may wait for a next group that will not come)
  const cpu = process.cpuUsage(cpu0);
  return { cpu: (cpu.user + cpu.system) / CALLS, gc: ((gcMs - gc0) * 1000) / CALLS };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const spread = (xs) => `${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)}`;
await measure(1); // warm-up
const c1 = [];
const c16 = [];
for (let r = 0; r < ROUNDS; r++) {
  if (ONLY !== "16") c1.push(await measure(1));
  if (ONLY !== "1") c16.push(await measure(16));
}
const show = (name, rs) => {
  const cpu = rs.map((r) => r.cpu);
  const gc = rs.map((r) => r.gc);
  console.log(
    `${name.padEnd(44)} ${median(cpu).toFixed(1).padStart(6)} µs/call [${spread(cpu)}]  of it GC ${median(gc).toFixed(1)} µs`,
  );
};
console.log(
  `audit-hot: ${DIST}, ${ROUNDS} rounds of ${CALLS} calls, node ${process.version}; CPU µs per call (intent + result), medians [spread]`,
);
if (c1.length) show("c=1  (intent tx, result tx)", c1);
if (c16.length) show("c=16 (16 intents per tx, 16 results per tx)", c16);

// The parts of one record, alone (the CPU of each step, µs per record).
const recordModule = await dist("audit/record.js");
const { encodeHeader, recordHash } = recordModule;
const { SealingSession } = await dist("audit/seal.js");
const { assertAuditable } = await dist("audit/events.js");
const { loadPublicKeyring } = await dist("keyring/keyring.js");
const session = SealingSession.start(loadPublicKeyring(dir).publicKey);
const event = {
  type: "tool_called",
  run: records.run,
  serverLabel: "bench",
  requestId: 42,
  tool: "echo",
  fingerprint: call.fingerprint,
  epoch: call.epoch,
  revision: 1,
  grant: null,
  argumentsDigest: "sha256:71af0c3e9b8d7f6e5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291807f6e",
  effectiveArgumentsDigest: "sha256:71af0c3e9b8d7f6e5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a291807f6e",
  defaultsApplied: [],
};
const header = {
  v: 1,
  seq: 1,
  prev: "0".repeat(64),
  time: new Date().toISOString(),
  type: "tool_called",
  writer: log.writerId,
  pid: process.pid,
  key: log.keyId,
  epk: session.epk,
  nonce: "AAAAAAAAAAAAAAAB",
};
const plaintext = Buffer.from(JSON.stringify(event));
const headerText = encodeHeader(header);
const record = session.sealRecord(session.nextNonce(), headerText, plaintext);
const { argumentsDigest } = await dist("audit/events.js");
const parts = {
  "assertAuditable + JSON.stringify(event)": () => {
    assertAuditable(event);
    Buffer.from(JSON.stringify(event));
  },
  "argumentsDigest({message})": () => argumentsDigest({ message: "ping 1" }),
  encodeHeader: () => encodeHeader(header),
  // (a build before the session's header writer has none: the part is left out)
  ...(recordModule.HeaderWriter && {
    "HeaderWriter.text (the writer's path)": (
      (w) => () =>
        w.text(header.seq, header.prev, header.time, header.type, header.nonce)
    )(new recordModule.HeaderWriter(header)),
  }),
  "new Date().toISOString()": () => new Date().toISOString(),
  "seal (ChaCha20-Poly1305)": () => session.sealRecord(session.nextNonce(), headerText, plaintext),
  "recordHash (SHA-256 hex)": () => recordHash(record),
};
const N = 50_000;
const partCost = {};
for (const [name, f] of Object.entries(parts)) {
  for (let i = 0; i < 2000; i++) f();
  const t = process.cpuUsage();
  for (let i = 0; i < N; i++) f();
  const u = process.cpuUsage(t);
  partCost[name] = (u.user + u.system) / N;
  console.log(`  part: ${name.padEnd(40)} ${partCost[name].toFixed(2).padStart(6)} µs`);
}

// The store's share alone, on the same schema (a fresh store, its checkpoints left out): per
// call, its two records inserted (the multi-row INSERT of src/audit/log.ts), its open-intents row
// inserted and deleted, and its share of one commit per group of 16 calls (the group's intents
// with the previous group's results: how groups form at c=16 now).
const sqlDir = mkdtempSync(join(tmpdir(), "portcullis-audit-floor-"));
process.on("exit", () => rmSync(sqlDir, { recursive: true, force: true }));
const sdb = openStore(sqlDir);
sdb.pragma("synchronous = NORMAL");
sdb.pragma("wal_autocheckpoint = 0");
const GROUP = 16;
const rows16 = Array.from({ length: GROUP }, () => "(?, ?)").join(", ");
const insert16 = sdb.prepare(`INSERT INTO audit_records (seq, record) VALUES ${rows16}`);
const maxSeq = sdb.prepare("SELECT max(seq) FROM audit_records").pluck();
const opened = sdb.prepare(
  `INSERT OR REPLACE INTO open_intents (gateway_id, call_key, run, server_label, request_id, tool, epoch, opened_at)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
);
const closed = sdb.prepare("DELETE FROM open_intents WHERE gateway_id = ? AND call_key = ?");
const key = (i) => JSON.stringify([records.run, i]);
let seq = 0;
const group = sdb.transaction((first) => {
  maxSeq.get();
  for (const from of [first - GROUP, first]) {
    if (from < 0) continue;
    const params = [];
    for (let i = 0; i < GROUP; i++) params.push(++seq, record);
    insert16.run(params);
  }
  for (let i = first; i < first + GROUP; i++) {
    if (i >= GROUP) closed.run("bench-gateway", key(i - GROUP));
    opened.run("bench-gateway", key(i), records.run, "bench", String(i), "echo", call.epoch, header.time);
  }
});
const sqlCalls = 40_000;
let sqlCpu = Number.POSITIVE_INFINITY;
for (let round = 0; round < 3; round++) {
  const t = process.cpuUsage();
  for (let i = round * sqlCalls; i < (round + 1) * sqlCalls; i += GROUP) group.immediate(i);
  const u = process.cpuUsage(t);
  sqlCpu = Math.min(sqlCpu, (u.user + u.system) / sqlCalls);
  sdb.pragma("wal_checkpoint(TRUNCATE)"); // (outside the figure: about one per 1,000 frames in a gateway)
}
sdb.close();
const twice = (name) => 2 * (partCost[name] ?? 0);
const floor = {
  "2 × seal": twice("seal (ChaCha20-Poly1305)"),
  "2 × record hash": twice("recordHash (SHA-256 hex)"),
  "2 × header (session writer)": twice("HeaderWriter.text (the writer's path)"),
  "2 × event check + JSON": twice("assertAuditable + JSON.stringify(event)"),
  "store: 2 inserts, row in and out, 1/16 commit": sqlCpu,
};
const total = Object.values(floor).reduce((a, b) => a + b, 0);
console.log(
  `floor of the audit per call at c=16 (its parts alone, best of 3 for the store): ${total.toFixed(1)} µs`,
);
for (const [name, us] of Object.entries(floor))
  console.log(`  ${name.padEnd(46)} ${us.toFixed(2).padStart(6)} µs`);
log.close();
db.close();
