#!/usr/bin/env node
// The cutting of a server's long stderr line (src/supervisor/stderrLines.ts): a stream without a
// newline fed in 64 KiB chunks, each case timed over 5 rounds (median and minimum, ms), with a
// plain value released and with one holding "]", whose markers settle (src/vault/scrub.ts). Each
// DIR given is a build measured in turn (default: dist), e.g.
// `node bench/stderr-cut.mjs OTHER/dist dist`.
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const dists = process.argv.length > 2 ? process.argv.slice(2) : ["dist"];
const cases = {
  "a 20-char value, 4 MB holding it every 39 chars": [
    "api",
    "S3cr3tV4lue-zq9XwK7p",
    "lorem ipsum S3cr3tV4lue-zq9XwK7p dolor ".repeat(100_000),
  ],
  "the value s]x, 4 MB holding s]xxxxx every 39 chars": [
    "s",
    "s]x",
    "lorem ipsum s]xxxxx dolor sit amet, con".repeat(100_000),
  ],
  "the value s]x, s] and a million x": ["s", "s]x", `s]${"x".repeat(1_000_000)}`],
};
for (const dist of dists) {
  const load = (p) => import(pathToFileURL(join(resolve(dist), ...p)).href);
  const { StderrLines } = await load(["supervisor", "stderrLines.js"]);
  const { ReleasedValues } = await load(["vault", "scrub.js"]);
  console.log(`== ${dist}`);
  for (const [name, [scope, value, text]] of Object.entries(cases)) {
    const bytes = Buffer.from(text);
    const times = [];
    let lines = 0;
    for (let round = 0; round < 5; round++) {
      const released = new ReleasedValues();
      released.add(scope, value);
      let n = 0;
      const stderr = new StderrLines(() => n++, released);
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < bytes.length; i += 65536) stderr.push(bytes.subarray(i, i + 65536));
      stderr.end();
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      lines = n;
    }
    times.sort((a, b) => a - b);
    console.log(`${name}: ${times[2].toFixed(0)} (${times[0].toFixed(0)}) ms, ${lines} lines shown`);
  }
}
