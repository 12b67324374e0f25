#!/usr/bin/env node
import { join, resolve } from "node:path";
// The egress proxy's echo check (src/vault/egress/echo.ts) on the bodies it reads: withoutValues
// of a 64 KB answer (JSON, an HTML page full of `&amp;` and URLs with escapes), with no value in
// it and with one echoed, three 40-character values released; and a 1 MB HTML page. µs per body,
// median and minimum of rounds. `--dist DIR` measures another build; `--base DIR` measures another
// build beside this one in the same process, round by round in turn, so both meet the same load.
import { pathToFileURL } from "node:url";

const at = process.argv.indexOf("--dist");
const dist = resolve(at === -1 ? "dist" : process.argv[at + 1]);
const load = async (d) => import(pathToFileURL(join(d, "vault", "egress", "echo.js")).href);
const builds = [await load(dist)];
const baseAt = process.argv.indexOf("--base");
if (baseAt !== -1) builds.push(await load(resolve(process.argv[baseAt + 1])));

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

function measure(name, body, n, rounds = 7) {
  const times = builds.map(() => []);
  for (let r = 0; r < rounds; r++)
    builds.forEach((b, k) => {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) b.withoutValues(body, spellings[k]);
      times[k].push(Number(process.hrtime.bigint() - t0) / 1000 / n);
    });
  const shown = times.map((t) => {
    t.sort((a, b) => a - b);
    return `${t[rounds >> 1].toFixed(1)} (min ${t[0].toFixed(1)})`;
  });
  console.log(`${name.padEnd(44)} ${shown.join("   base: ")} µs/body`);
}

measure("64 KB JSON, no value", json, 200);
measure("64 KB JSON, one value", echoed(json), 200);
measure("64 KB HTML with & and %, no value", html, 200);
measure("64 KB HTML with & and %, one value", echoed(html), 200);
measure("1 MB HTML with & and %, no value", fill(html.toString("latin1"), 1 << 20), 10);
