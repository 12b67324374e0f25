#!/usr/bin/env node
import { join, resolve } from "node:path";
// The egress proxy's echo check (src/vault/egress/echo.ts) on the bodies it reads: withoutValues
// of a 64 KB answer (JSON, an HTML page full of `&amp;` and URLs with escapes), with no value in
// it and with one echoed, three 40-character values released; and a 1 MB HTML page. µs per body,
// median and minimum of rounds; and 64 KB answers that are echoes end to end (an upstream that
// repeats what it is sent), the value as itself and its base64 with a third of its characters
// URL-escaped: before session forty-nine each echo replaced made the check read the rest of the
// body again (16,000 echoes in 528 KB: 2.4-3.8 s; 8,000 escaped in 584 KB: 90 s). `--dist DIR` measures another build; `--base DIR` (repeatable)
// measures another build beside this one in the same process, round by round in turn, so all meet
// the same load; `--rounds N` (7 unless given) rounds, more on a loaded machine.
import { pathToFileURL } from "node:url";

const valuesOf = (flag) => process.argv.flatMap((a, i) => (a === flag ? [process.argv[i + 1]] : []));
const dist = resolve(valuesOf("--dist")[0] ?? "dist");
const bases = valuesOf("--base").map((d) => resolve(d));
const ROUNDS = Number(valuesOf("--rounds")[0] ?? 7);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1)
  throw new Error("bench/echo.mjs: --rounds takes a whole number, 1 or more");
const load = async (d) => import(pathToFileURL(join(d, "vault", "egress", "echo.js")).href);
const builds = [await load(dist)];
for (const d of bases) builds.push(await load(d));
if (bases.length > 0) console.log(["this: " + dist, ...bases.map((d, i) => `base${i + 1}: ${d}`)].join("\n"));

const key = (i) => `sk-live-${String(i).repeat(4)}Qz7w9XvB2mN4pL6tR8yU1eA3c`.slice(0, 40);
const released = [1, 2, 3].map((i) => [`k${i}`, key(i)]);
const spellings = builds.map((b) => b.spellingsOf(released));

const fill = (unit, size) => Buffer.from(unit.repeat(Math.ceil(size / unit.length)).slice(0, size), "latin1");
const json = fill('{"id":"7f3a","name":"The quick brown fox","path":"/v1/items?x=1","n":42},', 64 * 1024);
const html = fill(
  '<p class="x">Fish &amp; chips &lt;3 <a href="/s?q=a%20b&amp;p=2">next</a> &#169; 2026</p>\n',
  64 * 1024,
);
const echoed = (body) => Buffer.concat([body, Buffer.from(`invalid token ${key(2)}`)]);

function measure(name, body, n, rounds = ROUNDS) {
  const times = builds.map(() => []);
  // (each round starts with the next build: none is always the one measured first)
  for (let r = 0; r < rounds; r++)
    for (let j = 0; j < builds.length; j++) {
      const k = (r + j) % builds.length;
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) builds[k].withoutValues(body, spellings[k]);
      times[k].push(Number(process.hrtime.bigint() - t0) / 1000 / n);
    }
  const shown = times.map((t) => {
    t.sort((a, b) => a - b);
    return `${t[rounds >> 1].toFixed(1)} (min ${t[0].toFixed(1)})`;
  });
  const spread = times.map((t) => `${((100 * (t[t.length - 1] - t[0])) / t[rounds >> 1]).toFixed(0)}%`);
  const labels = shown.map((x, k) => (k === 0 ? x : `base${k}: ${x}`));
  console.log(
    `${name.padEnd(36)} ${labels.join("   ")} µs/body (spread max-min/median: ${spread.join(", ")})`,
  );
}

measure("64 KB JSON, no value", json, 200);
measure("64 KB JSON, one value", echoed(json), 200);
measure("64 KB HTML with & and %, no value", html, 200);
measure("64 KB HTML with & and %, one value", echoed(html), 200);
measure("1 MB HTML with & and %, no value", fill(html.toString("latin1"), 1 << 20), 10);
const flood = (unit) => fill(`x ${unit} y `, 64 * 1024);
const escapedB64 = [...Buffer.from(key(2)).toString("base64")]
  .map((c, i) => (i % 3 === 0 ? `%${c.charCodeAt(0).toString(16).toUpperCase()}` : c))
  .join("");
measure("64 KB of echoes, the value", flood(key(2)), 10);
measure("64 KB of echoes, base64 escaped", flood(escapedB64), 2);
