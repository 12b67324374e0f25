#!/usr/bin/env node
// Where a .cpuprofile's time went (node --cpu-prof's JSON, e.g. bench/relay's BENCH_PROFILE_DIR):
// the sampled time by file and by function, each function's own time (what it ran itself,
// natives it called directly included, as V8's profiler counts them), idle left out.
//
//   node bench/cpuprofile.mjs FILE [--from MS] [--to MS] [--top N] [--timeline MS]
// --from/--to: only the samples in that window (ms since the profile's start), e.g. a bench's
// c=1 stretch; --timeline MS: instead, the busy, idle and fdatasync time in slices of MS, to
// find those stretches (a gateway's start, its warm-up, c=1, c=16).
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  options: {
    from: { type: "string", default: "0" },
    to: { type: "string", default: "Infinity" },
    top: { type: "string", default: "40" },
    timeline: { type: "string" },
  },
  allowPositionals: true,
});
if (positionals.length !== 1) {
  process.stderr.write("cpuprofile: one .cpuprofile file is needed (node --cpu-prof's output)\n");
  process.exit(2);
}
const profile = JSON.parse(readFileSync(positionals[0], "utf8"));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const from = Number(values.from) * 1000;
const to = Number(values.to) * 1000;
const ms = (us) => (us / 1000).toFixed(1).padStart(8);

/** Each sample's node and the time it stands for (µs since the start, µs long). */
function* samples() {
  let t = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    yield { node: nodes.get(profile.samples[i]), at: t, us: profile.timeDeltas[i + 1] ?? 0 };
  }
}

if (values.timeline) {
  const slice = Number(values.timeline) * 1000;
  const rows = [];
  for (const { node, at, us } of samples()) {
    const i = Math.floor(at / slice);
    rows[i] ??= { busy: 0, idle: 0, fdatasync: 0 };
    const row = rows[i];
    const name = node.callFrame.functionName;
    row[name === "(idle)" ? "idle" : name === "fdatasync" ? "fdatasync" : "busy"] += us;
  }
  console.log("      ms     busy     idle fdatasync");
  rows.forEach((r, i) => {
    if (r)
      console.log(String(i * Number(values.timeline)).padStart(8), ms(r.busy), ms(r.idle), ms(r.fdatasync));
  });
  process.exit(0);
}

const byFile = new Map();
const byFunction = new Map();
let total = 0;
const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
for (const { node, at, us } of samples()) {
  if (at < from || at > to || node.callFrame.functionName === "(idle)") continue;
  const { functionName, url, lineNumber } = node.callFrame;
  const file = (url || "(native)").replace(/^.*\/(dist|node_modules)\//, "$1/");
  add(byFile, file, us);
  add(byFunction, `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`, us);
  total += us;
}
const show = (title, map) => {
  console.log(title);
  for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top)))
    console.log(ms(us), `${((100 * us) / total).toFixed(1)}%`.padStart(6), key);
};
console.log(`${(total / 1000).toFixed(1)} ms sampled, idle left out`);
show("by file (ms, share)", byFile);
show("by function, its own time (ms, share)", byFunction);
