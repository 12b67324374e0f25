// One catalog fetch (every page of the gateway's own tools/list) has an overall deadline
// (CATALOG_DEADLINE_MS in src/gateway/catalogSync.ts, shortened here with
// PORTCULLIS_CATALOG_DEADLINE_MS), besides the timeout of each page. Without it, a server that
// answered each page just under the page timeout, with a new cursor each time, held the catalog
// (and every list and call waiting for it) for up to 1,000 pages × 30 s: over eight hours. Past the
// deadline the fetch fails as any failed fetch does: what waits for it is answered
// catalog_unavailable, saying which server and how many pages were read, and the fetch is tried
// again on its own. Real gateway, real fixture server (hostile-catalog.mjs), raw client.
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { completeLines } from "../helpers/completeLines.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { bundledFixture } from "../helpers/fixtureBundle.js";
import { NODE, REPO } from "../helpers/paths.js";
import { type RawPeer, rawGateway } from "../helpers/raw.js";

const FIXTURE =
  bundledFixture(REPO, "hostile-catalog") ?? join(REPO, "test", "fixtures", "servers", "hostile-catalog.mjs");

let peers: RawPeer[] = [];
afterEach(async () => {
  for (const p of peers) await p.close();
  peers = [];
});

/** the deadline of one fetch, in ms; each page keeps its own 30 s timeout */
const DEADLINE = "3000";
const OVERDUE = /server "slow-pages" did not list its tools within 3 s \(the deadline of one catalog fetch\)/;

/** A gateway in front of hostile-catalog.mjs running `script`, and what that server received. */
function gateway(script: string): {
  gw: RawPeer;
  dir: string;
  received: () => { method?: string; params?: { cursor?: unknown } }[];
} {
  const dir = tempDir("portcullis-catalog-deadline-");
  const path = join(dir, "script.mjs");
  const log = join(dir, "received.jsonl");
  writeFileSync(path, script);
  const gw = rawGateway({
    args: ["--label", "slow-pages", "--approval", "none", "--", NODE, FIXTURE],
    env: { FIXTURE_SCRIPT: path, FIXTURE_LOG: log, PORTCULLIS_CATALOG_DEADLINE_MS: DEADLINE },
  });
  peers.push(gw);
  const received = () =>
    existsSync(log)
      ? completeLines(readFileSync(log, "utf8"))
          .filter((l) => l.endsWith("}"))
          .flatMap((l) => {
            try {
              return [JSON.parse(l)];
            } catch {
              return []; // a line still being written
            }
          })
      : [];
  return { gw, dir, received };
}

describe("a catalog fetch whose pages never end, each answered well within the page timeout", () => {
  it("fails at the fetch's deadline: the held tools/list gets catalog_unavailable naming the server and the pages read, and the gateway lives on", async () => {
    // a page every 250 ms, each with a new cursor: 1,000 pages would take over 4 min, and each is
    // far within the 30 s page timeout
    const { gw } = gateway(`
      export function list(params) {
        const n = params.cursor === undefined ? 0 : Number(params.cursor.slice(1));
        return new Promise((resolve) =>
          setTimeout(
            () => resolve({ tools: [{ name: "t" + n, inputSchema: { type: "object" } }], nextCursor: "c" + (n + 1) }),
            250,
          ),
        );
      }
    `);
    await gw.initialize();
    const list = await gw.request("tools/list", {}, 60_000);
    expect(list.error, JSON.stringify(list)).toMatchObject({
      code: -32603,
      data: { error: "catalog_unavailable", catalogError: expect.stringMatching(OVERDUE) },
    });
    const said = (list.error as { data: { catalogError: string } }).data.catalogError;
    const pages = Number(/(\d+) pages? of tools\/list read/.exec(said)?.[1]);
    expect(pages).toBeGreaterThan(0);
    expect(pages).toBeLessThan(1000);
    // said on stderr, as any failed fetch is, and tried again on its own
    await waitFor(() => OVERDUE.test(gw.stderr()), 10_000, "the warning on stderr");
    expect(gw.stderr()).toMatch(/cannot fetch the tool catalog: server "slow-pages" did not list its tools/);
    expect(gw.stderr()).toMatch(/portcullis fetches it again/);
    expect((await gw.request("ping", undefined, 20_000)).result).toEqual({});
  }, 90_000);

  it("a page still unanswered at the deadline is given up on then (cancelled at the server), not at its own 30 s timeout; the catalog is served once the server answers", async () => {
    const { gw, dir, received } = gateway(`
      import { existsSync } from "node:fs";
      const hang = process.env.FIXTURE_LOG.replace(/received\\.jsonl$/, "hang");
      export function list(params) {
        if (!existsSync(hang)) return { tools: [{ name: "ok", inputSchema: { type: "object" } }] };
        if (params.cursor === undefined) return { tools: [{ name: "a", inputSchema: { type: "object" } }], nextCursor: "c1" };
        if (params.cursor === "c1") return { tools: [{ name: "b", inputSchema: { type: "object" } }], nextCursor: "c2" };
        return new Promise(() => {}); // the third page: never answered
      }
    `);
    const hang = join(dir, "hang");
    writeFileSync(hang, "");
    await gw.initialize();
    const list = await gw.request("tools/list", {}, 60_000);
    expect(list.error, JSON.stringify(list)).toMatchObject({
      data: {
        error: "catalog_unavailable",
        catalogError: expect.stringMatching(
          /did not list its tools within 3 s .*: 2 pages of tools\/list read/,
        ),
      },
    });
    // the third page's request was cancelled at the server when the deadline passed
    const third = received().find((m) => m.method === "tools/list" && m.params?.cursor === "c2");
    expect(third).toBeDefined();
    await waitFor(
      () => received().find((m) => m.method === "notifications/cancelled"),
      10_000,
      "the cancellation of the page the deadline cut",
    );
    // the server answers again: the retry (on its own, or this list) serves the catalog
    rmSync(hang);
    const served = await waitFor(
      async () => {
        const r = await gw.request("tools/list", {}, 20_000);
        return r.result ? r : undefined;
      },
      30_000,
      "the catalog once the server answers",
    );
    expect(served.result).toMatchObject({ tools: [{ name: "ok" }] });
  }, 90_000);
});
