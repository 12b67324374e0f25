// Catalog benchmark: two 1,000-tool catalogs with realistic schemas, about 5% changed.
// Times fingerprinting both + diffCatalogs, median of 20 runs, against a 20 ms target, beside a
// baseline of plain JSON.stringify + one sha256 over the same two catalogs, in the same run.
//
// The target row does what the gateway does when a rebuilt server lists its tools: catalog A is
// fingerprinted from scratch, then catalog B is fingerprinted as A's successor (a tool equal to
// A's tool of the same name reuses its fingerprint), then the two are diffed. Every step runs
// inside the timed region, on fresh work each run: nothing is cached between runs. The row
// "independently" fingerprints B from scratch too, as `portcullis catalog diff` does for two
// stored revisions.
//
//   npx tsc -p tsconfig.json && node --expose-gc bench/catalog.mjs
//
// With --expose-gc, a full collection runs before every timed run (not inside it), so a run does
// not pay for the garbage of the one before.
import { createHash } from "node:crypto";
import { diffCatalogs, snapshotOf } from "../dist/catalog/index.js";

const TARGET_MS = 20;
const RUNS = 20;
const WARMUP = 5;
const TOOLS = 1000;

// xorshift32: the same catalogs on every machine
let seed = 0x9e3779b9;
function rnd() {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rnd() * a.length)];
const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));

const VERBS = ["get", "list", "search", "create", "update", "delete", "sync", "export", "describe", "rotate"];
const NOUNS = [
  "issue",
  "build",
  "release",
  "deployment",
  "secret",
  "invoice",
  "ticket",
  "log",
  "metric",
  "user",
];
const SENTENCES = [
  "Returns the current state of the requested resource, including its metadata, owners and the timestamps of its last changes.",
  "Results are paginated; pass the cursor returned by the previous call to continue where it stopped.",
  "The call is scoped to the workspace configured for this server and never reaches other tenants.",
  "Use this before proposing a change so that the plan reflects what is actually deployed right now.",
  "Rate limits apply per credential; a 429 answer means the caller should wait before retrying.",
  "Fields that are not requested are omitted from the answer to keep the response small.",
];

function description() {
  let s = "";
  while (s.length < 300) s += (s ? " " : "") + pick(SENTENCES);
  return s;
}

function property(depth) {
  switch (int(0, depth > 0 ? 5 : 4)) {
    case 0:
      return { type: "string", description: pick(SENTENCES), minLength: 1, maxLength: int(32, 512) };
    case 1:
      return {
        type: "string",
        enum: ["dev", "staging", "production", "sandbox"].slice(0, int(2, 4)),
        default: "dev",
        description: "Environment the call applies to.",
      };
    case 2:
      return {
        type: "integer",
        minimum: 1,
        maximum: int(50, 1000),
        default: int(1, 50),
        description: "Page size.",
      };
    case 3:
      return { type: "boolean", default: rnd() < 0.5, description: "Include archived entries." };
    case 4:
      return {
        type: "array",
        items: { type: "string", pattern: "^[a-z0-9-]+$" },
        maxItems: 20,
        uniqueItems: true,
      };
    default: {
      const properties = {};
      for (let i = 0, n = int(2, 4); i < n; i++) properties[`opt_${i}`] = property(depth - 1);
      return { type: "object", properties, additionalProperties: false, description: "Advanced options." };
    }
  }
}

function tool(i) {
  const properties = {};
  const n = int(3, 8);
  for (let p = 0; p < n; p++) properties[`${pick(NOUNS)}_${p}`] = property(1);
  const names = Object.keys(properties);
  const t = {
    name: `${pick(VERBS)}_${pick(NOUNS)}_${i}`,
    title: `Tool ${i}`,
    description: description(),
    inputSchema: {
      type: "object",
      properties,
      required: names.slice(0, int(1, Math.min(3, names.length))),
      additionalProperties: false,
    },
    annotations: { readOnlyHint: rnd() < 0.6, openWorldHint: rnd() < 0.3 },
  };
  if (rnd() < 0.3) {
    t.outputSchema = { type: "object", properties: { id: { type: "string" }, status: { type: "string" } } };
  }
  return t;
}

const before = Array.from({ length: TOOLS }, (_, i) => tool(i));
const after = JSON.parse(JSON.stringify(before));

// ~5% changed: 30 modified in various ways, 10 removed, 10 added (5 of them look like renames)
const counts = { modified: 0, removed: 0, added: 0 };
const touched = new Set();
function untouched() {
  for (;;) {
    const i = int(0, after.length - 1);
    if (!touched.has(after[i].name)) return i;
  }
}
const MODS = [
  (t) => (t.description = t.description.replace("Returns", "Returns and updates")),
  (t) => (t.inputSchema.properties.destination_url = { type: "string", format: "uri" }),
  (t) => {
    const p = Object.values(t.inputSchema.properties).find((x) => x.enum);
    if (p) p.enum.push("production-eu");
    else t.inputSchema.required = [];
  },
  (t) => {
    const p = Object.values(t.inputSchema.properties).find((x) => "default" in x);
    if (p) p.default = typeof p.default === "boolean" ? !p.default : "production";
  },
  (t) => (t.annotations.readOnlyHint = !t.annotations.readOnlyHint),
  (t) => (t.inputSchema.additionalProperties = true),
];
for (let k = 0; k < 30; k++) {
  const i = untouched();
  touched.add(after[i].name);
  MODS[k % MODS.length](after[i]);
  counts.modified++;
}
for (let k = 0; k < 10; k++) {
  const i = untouched();
  const [gone] = after.splice(i, 1);
  touched.add(gone.name);
  counts.removed++;
  const added = k < 5 ? { ...JSON.parse(JSON.stringify(gone)), name: `${gone.name}_v2` } : tool(TOOLS + k);
  if (k < 5) added.inputSchema.properties.project = { type: "string" };
  after.push(added);
  touched.add(added.name);
  counts.added++;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function measure(fn) {
  for (let i = 0; i < WARMUP; i++) fn();
  const times = [];
  let last;
  for (let i = 0; i < RUNS; i++) {
    globalThis.gc?.();
    const t0 = performance.now();
    last = fn();
    times.push(performance.now() - t0);
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { median: median(times), min: sorted[0], max: sorted.at(-1), last };
}

const bytes = JSON.stringify(before).length + JSON.stringify(after).length;

const baseline = measure(() => {
  const a = createHash("sha256").update(JSON.stringify(before)).digest("hex");
  const b = createHash("sha256").update(JSON.stringify(after)).digest("hex");
  return a !== b;
});
const snapshotsOnly = measure(() => [snapshotOf(before, 1), snapshotOf(after, 1)]);
const withSnapshots = measure(() => {
  const a = snapshotOf(before, 1);
  const b = snapshotOf(after, 1, { previous: a });
  return diffCatalogs(a, b);
});
const independently = measure(() => {
  const a = snapshotOf(before, 1);
  const b = snapshotOf(after, 1);
  return diffCatalogs(a, b);
});
const snapA = snapshotOf(before, 1);
const snapB = snapshotOf(after, 1);
const diffOnly = measure(() => diffCatalogs(snapA, snapB));
const withArrays = measure(() => {
  const a = snapshotOf(before, 1);
  const b = snapshotOf(after, 1);
  return diffCatalogs(a.tools, b.tools);
});

const d = withSnapshots.last;
const kinds = { added: 0, removed: 0, modified: 0 };
for (const e of d.entries) kinds[e.kind]++;

const rows = [
  ["baseline: JSON.stringify + sha256, both catalogs", baseline],
  ["snapshotOf x2 (fingerprints only)", snapshotsOnly],
  ["A, then B as A's successor, + diff (gateway)", withSnapshots],
  ["A and B independently + diff", independently],
  ["snapshotOf x2 + diffCatalogs(tool arrays)", withArrays],
  ["diffCatalogs(snapshots) alone", diffOnly],
];
const fmt = (x) => x.toFixed(2).padStart(8);
console.log(
  `catalog bench: ${TOOLS} tools per catalog, ${(bytes / 1024 / 1024).toFixed(2)} MiB of JSON in all; ` +
    `changed: ${counts.modified} modified, ${counts.removed} removed, ${counts.added} added; ` +
    `node ${process.version}; median of ${RUNS} runs after ${WARMUP} warm-up runs` +
    (globalThis.gc ? "; gc before each run" : "; run with --expose-gc to collect before each run"),
);
console.log(
  `diff found: ${kinds.added} added, ${kinds.removed} removed, ${kinds.modified} modified, ${d.renameCandidates.length} rename candidates, expands=${d.expands}`,
);
console.log("");
console.log(
  `${"case".padEnd(50)} ${"median ms".padStart(10)} ${"min".padStart(8)} ${"max".padStart(8)} ${"÷ target".padStart(9)} ${"÷ baseline".padStart(11)}`,
);
for (const [name, r] of rows) {
  console.log(
    `${name.padEnd(50)} ${fmt(r.median).padStart(10)} ${fmt(r.min)} ${fmt(r.max)} ${(r.median / TARGET_MS).toFixed(2).padStart(9)} ${(r.median / baseline.median).toFixed(2).padStart(11)}`,
  );
}
const main = withSnapshots.median;
console.log("");
console.log(
  `target: fingerprint A, B (as A's successor) + diff under ${TARGET_MS} ms: median ${main.toFixed(2)} ms = ${(main / TARGET_MS).toFixed(2)} x target ` +
    `(${main <= TARGET_MS ? "met" : "NOT met"}); best run ${withSnapshots.min.toFixed(2)} ms; ` +
    `${(main / baseline.median).toFixed(2)} x the stringify+sha256 baseline measured in this run`,
);
