#!/usr/bin/env node
// Settling (src/vault/scrub.ts, settledAround) with a backslash in the text: a marker that takes
// one character a round (the value `s]x` in `s]xxxx…`) searches a stretch around it each round,
// and scrubbing fails closed past 64 characters searched per character of the text (plus 1 Mi).
// For each build given (default: dist): how long a run of `x` a 2 KB line can hold with one `\n`
// escape in it before scrubbing fails closed, and the time to scrub runs of 1,000 and 100,000
// `x` with and without that escape. E.g. `node bench/settle.mjs OTHER/dist dist`.
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const dists = process.argv.length > 2 ? process.argv.slice(2) : ["dist"];
for (const dist of dists) {
  const { ReleasedValues } = await import(pathToFileURL(join(resolve(dist), "vault", "scrub.js")).href);
  const released = new ReleasedValues();
  released.add("s", "s]x");
  const line = (n, withEscape) => `s]${"x".repeat(n)}${withEscape ? "\\n" : ""}`;
  const scrubs = (t) => {
    try {
      released.scrubText(t);
      return true;
    } catch {
      return false;
    }
  };
  // the longest run that still scrubs (binary search; scrubbing is monotone in the run here)
  let lo = 0;
  let hi = 2_000_000;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (scrubs(line(mid, true))) lo = mid;
    else hi = mid - 1;
  }
  console.log(`== ${dist}`);
  console.log(`longest run of x scrubbed with one escape in the line: ${lo}`);
  for (const n of [1_000, 100_000])
    for (const withEscape of [false, true]) {
      const t = line(n, withEscape);
      const times = [];
      let ok = true;
      for (let round = 0; round < 5; round++) {
        const t0 = process.hrtime.bigint();
        ok = scrubs(t);
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      times.sort((a, b) => a - b);
      const what = ok ? "scrubbed" : "failed closed";
      console.log(
        `s] and ${n} x${withEscape ? " and \\n" : ""}: ${times[2].toFixed(2)} (${times[0].toFixed(2)}) ms, ${what}`,
      );
    }
}
