// A server whose tools/list pages lead back to a cursor already followed (c1 → c2 → c1 …) would
// keep one catalog fetch, and every list and call waiting for it, going for ever. The gateway
// keeps the cursors of one fetch and stops at the first that comes back: the fetch fails
// `catalog_unavailable` saying the pagination loops, no page is asked twice within it, nothing is
// served from the pages read, and the gateway and its audit chain live on.
// Real gateway, real fixture server (hostile-catalog.mjs, paged by a script), raw client.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { bundledFixture } from "../helpers/fixtureBundle.js";
import { runCli } from "../helpers/gateway.js";
import { NODE, REPO } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

const FIXTURE =
  bundledFixture(REPO, "hostile-catalog") ?? join(REPO, "test", "fixtures", "servers", "hostile-catalog.mjs");

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it("a tools/list whose next cursor comes back is refused catalog_unavailable (the pagination loops), each page asked once per fetch", async () => {
  const dir = tempDir("portcullis-cursor-loop-");
  cleanup.push(() => removeDir(dir));
  const script = join(dir, "script.mjs");
  const log = join(dir, "received.jsonl");
  writeFileSync(
    script,
    `const next = { undefined: "c1", c1: "c2", c2: "c1" };
     export function list(params) {
       return { tools: [{ name: "t-" + (params.cursor ?? "first"), inputSchema: { type: "object" } }], nextCursor: next[params.cursor] };
     }`,
  );
  const gw: RawGateway = rawGateway({
    args: ["--label", "looping", "--approval", "none", "--", NODE, FIXTURE],
    env: { FIXTURE_SCRIPT: script, FIXTURE_LOG: log },
  });
  cleanup.push(() => gw.close());
  await gw.initialize();

  const list = await gw.request("tools/list", {}, 30_000);
  expect(list.error, JSON.stringify(list)).toMatchObject({
    code: -32603,
    data: {
      error: "catalog_unavailable",
      catalogError: expect.stringContaining("the server's tools/list pagination loops (a cursor came back)"),
    },
  });
  // nothing of the pages read is served: a tool of the first page is not in any catalog
  const call = await gw.request("tools/call", { name: "t-first", arguments: {} }, 30_000);
  expect(call.result).toBeUndefined();
  expect(call.error?.data).toMatchObject({ error: "catalog_unavailable" });

  // each fetch asked the first page, c1 and c2 once, then stopped (a new fetch starts over)
  const cursors = (existsSync(log) ? readFileSync(log, "utf8") : "")
    .split("\n")
    .filter((l) => l.endsWith("}"))
    .map((l) => JSON.parse(l) as { method?: string; params?: { cursor?: string } })
    .filter((m) => m.method === "tools/list")
    .map((m) => m.params?.cursor ?? "first");
  expect(cursors.slice(0, 3)).toEqual(["first", "c1", "c2"]);
  for (let i = 3; i < cursors.length; i++) if (cursors[i] === "c1") expect(cursors[i - 1]).toBe("first");

  expect((await gw.request("ping", undefined, 20_000)).result).toEqual({});
  expect(gw.stderr()).toMatch(/cannot fetch the tool catalog: the server's tools\/list pagination loops/);
  const verified = await runCli(["audit", "verify", "--state-dir", gw.stateDir]);
  expect(verified.code, verified.stderr).toBe(0);
}, 60_000);
