#!/usr/bin/env node
import { join, resolve } from "node:path";
// The scrubber on the relay's hot path (src/vault/scrub.ts): scrubLine of a typical 2 KB server
// answer (a tools/call result, no released value in it, and one with a value echoed once; with a
// `%`, a `\u00e9`, an `&amp;`, and a value with a character written as an HTML reference) with
// three 40-character values released, and the same with one 4 KiB value released; µs per line,
// median and minimum of rounds (the minimum moves least with the machine's load). `--dist DIR`
// measures another build; `--base DIR` measures another build beside this one in the same process,
// round by round in turn, so that both meet the same load.
import { pathToFileURL } from "node:url";

const at = process.argv.indexOf("--dist");
const dist = resolve(at === -1 ? "dist" : process.argv[at + 1]);
const { ReleasedValues: ThisBuild } = await import(pathToFileURL(join(dist, "vault", "scrub.js")).href);
const baseAt = process.argv.indexOf("--base");
const Base =
  baseAt === -1
    ? null
    : (await import(pathToFileURL(join(resolve(process.argv[baseAt + 1]), "vault", "scrub.js")).href))
        .ReleasedValues;

/** A set of released values of this build (and of the base one, when measured), used as one. */
class ReleasedValues {
  constructor() {
    this.builds = [new ThisBuild(), ...(Base ? [new Base()] : [])];
  }
  add(scope, value) {
    for (const b of this.builds) b.add(scope, value);
  }
}

const key = (i) => `sk-live-${String(i).repeat(4)}Qz7w9XvB2mN4pL6tR8yU1eA3c`.slice(0, 40);
const filler = "The quick brown fox jumps over the lazy dog; 42 items, id=7f3a, path=/v1/items?x=1&y=2. ";
const body = (extra) => {
  let t = "";
  while (t.length < 1900) t += filler;
  return JSON.stringify({ jsonrpc: "2.0", id: 17, result: { content: [{ type: "text", text: t + extra }] } });
};

function measure(name, released, line, n = 20000, rounds = 7) {
  const times = released.builds.map(() => []);
  for (let r = 0; r < rounds; r++)
    released.builds.forEach((b, k) => {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) b.scrubLine(line);
      times[k].push(Number(process.hrtime.bigint() - t0) / 1000 / n);
    });
  const shown = times.map((t) => {
    t.sort((a, b) => a - b);
    return `${t[rounds >> 1].toFixed(2)} (min ${t[0].toFixed(2)})`;
  });
  console.log(`${name.padEnd(48)} ${shown.join("   base: ")} µs/line`);
}

const three = new ReleasedValues();
for (let i = 1; i <= 3; i++) three.add(`k${i}`, key(i));
measure("3 × 40-char values, 2 KB line, no value", three, body(""));
measure("3 × 40-char values, 2 KB line, one value", three, body(` ${key(2)}`));
measure("3 × 40-char values, 2 KB line with %, no value", three, body(" 100%25 done"));
measure("3 × 40-char values, 2 KB line with \\u00e9", three, body(" caf\u00e9").replace("\u00e9", "\\u00e9"));
measure("3 × 40-char values, 2 KB line with &amp;, no value", three, body(" fish &amp; chips"));
measure(
  "3 × 40-char values, 2 KB line, one value with &#45;",
  three,
  body(` ${key(2).replace("-", "&#45;")}`),
);
const big = new ReleasedValues();
let long = "";
while (long.length < 4096) long += key(long.length % 9);
try {
  big.add("big", long);
  measure("one 4 KiB value, 2 KB line, no value", big, body(""), 2000);
  measure("one 4 KiB value, 2 KB line with %, no value", big, body(" 100%25 done"), 2000);
} catch (e) {
  console.log(`one 4 KiB value: failed (${e.message})`);
}

// A hostile megabyte: every "a" starts a percent spelling of a 2,001-character value that runs
// 2,000 characters before it fails (the search's work is bounded, past which the rest is replaced).
const hostileValue = `${"a".repeat(2000)}b`;
const hostile = new ReleasedValues();
try {
  hostile.add("big", hostileValue);
  const text = `${"a%61".repeat(250_000)} then ${encodeURIComponent(hostileValue)}`;
  const line = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text } });
  measure("hostile 1 MB line, one 2,001-char value", hostile, line, 1, 3);
} catch (e) {
  console.log(`hostile 1 MB line: failed (${e.message})`);
}

// A value that repeats itself in a megabyte that repeats it: every place starts an occurrence
// (the regexes would read each whole; the search goes on value by value in linear time instead).
const periodic = new ReleasedValues();
periodic.add("k", "ab".repeat(100));
const run = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text: `${"ab".repeat(500_000)} end` } });
measure("1 MB run of a 200-char periodic value", periodic, run, 1, 5);
