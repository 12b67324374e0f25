import { afterEach, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { scriptedCatalogGateway } from "../helpers/scriptedCatalog.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it("a tools/list whose next cursor comes back is refused catalog_unavailable (the pagination loops), each page asked once per fetch", async () => {
  const { gw, received } = await scriptedCatalogGateway({
    script: `const next = { undefined: "c1", c1: "c2", c2: "c1" };
     export function list(params) {
       return { tools: [{ name: "t-" + (params.cursor ?? "first"), inputSchema: { type: "object" } }], nextCursor: next[params.cursor] };
     }`,
    args: ["--label", "looping", "--approval", "none"],
    cleanup,
  });

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
  const cursors = received()
    .filter((l) => l.endsWith("}"))
    .map((l) => JSON.parse(l) as { method?: string; params?: { cursor?: string } })
    .filter((m) => m.method === "tools/list")
    .map((m) => m.params?.cursor ?? "first");
  expect(cursors.slice(0, 3)).toEqual(["first", "c1", "c2"]);
  for (let i = 3; i < cursors.length; i++) if (cursors[i] === "c1") expect(cursors[i - 1]).toBe("first");

  expect((await gw.request("ping", undefined, 20_000)).result).toEqual({});
  // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
  await waitFor(
    () => /pagination loops/.test(gw.stderr()),
    20_000,
    "the gateway's line on the looping catalog",
  );
  expect(gw.stderr()).toMatch(/cannot fetch the tool catalog: the server's tools\/list pagination loops/);
  const verified = await runCli(["audit", "verify", "--state-dir", gw.stateDir]);
  expect(verified.code, verified.stderr).toBe(0);
}, 60_000);
