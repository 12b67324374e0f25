// The gateway's own tools/list requests (its catalog fetch, src/gateway/catalogSync.ts) have a
// timeout (CATALOG_TIMEOUT_MS, shortened here with PORTCULLIS_CATALOG_TIMEOUT_MS): a server that
// takes a tools/list and never answers it (stuck in a rebuild, hostile, buggy) no longer holds
// every later fetch of the connection behind that one for good. The request is cancelled at the
// server, a late answer is dropped, and the fetch fails like any other: a first fetch answers its
// held requests catalog_unavailable; either is retried on its own (RELIST_RETRY_*), and a list or
// call is an attempt too. Real gateway, real fixture servers, raw client.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { readJsonLines, removeDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** the gateway gives up on each tools/list after this long (the hold timeout stays 15 s) */
const TIMEOUT = { PORTCULLIS_CATALOG_TIMEOUT_MS: "1000" };
const GAVE_UP = /the server did not answer tools\/list within 1 s/;

const ECHO: ToolDef = { name: "echo", inputSchema: { type: "object" } };
const ADDED: ToolDef = {
  name: "added",
  description: "Added by the change.",
  inputSchema: { type: "object" },
};

function names(list: WireMessage): string[] {
  return ((list.result as { tools?: { name: string }[] } | undefined)?.tools ?? []).map((t) => t.name);
}

function lines(path: string): string[] {
  try {
    return readFileSync(path, "utf8").split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

interface Logged {
  method: string;
  params: { id?: unknown; requestId?: unknown; reason?: unknown } | null;
}

/**
 * A gateway in front of the lenient fixture whose tools/list is held while `hold` exists (created
 * here, before the server starts), and what that server received.
 */
function heldLenient(): { gw: RawGateway; hold: string; logged: () => Logged[] } {
  const dir = mkdtempSync(join(tmpdir(), "pc-catalog-timeout-"));
  const hold = join(dir, "hold");
  const methodLog = join(dir, "methods.jsonl");
  writeFileSync(hold, "");
  const gw = rawGateway({
    args: ["--label", "hung", "--approval", "none", "--", ...fixtureCommand("lenient")],
    env: { FIXTURE_METHOD_LOG: methodLog, FIXTURE_LIST_HOLD: hold, ...TIMEOUT },
  });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  return { gw, hold, logged: () => (existsSync(methodLog) ? readJsonLines<Logged>(methodLog) : []) };
}

describe("the gateway's own tools/list, never answered", () => {
  it("a first fetch: held requests get catalog_unavailable saying so, the request is cancelled at the server, the fetch is tried again on its own, and the catalog is served once the server answers", async () => {
    const { gw, hold, logged } = heldLenient();
    await gw.initialize();
    // held for the catalog, whose fetch the server never answers: refused at the gateway's
    // timeout, not left to the hold timeout (identity_pending), nor waiting for ever
    const list = await gw.request("tools/list", {}, 20_000);
    expect(list.error, JSON.stringify(list)).toMatchObject({
      code: -32603,
      data: { error: "catalog_unavailable", catalogError: expect.stringMatching(GAVE_UP) },
    });
    // the server was told the gateway gave up on that very request
    const held = logged().filter((l) => l.method === "held tools/list");
    expect(held.length).toBeGreaterThanOrEqual(1);
    const cancelled = await waitFor(
      () => logged().find((l) => l.method === "notifications/cancelled"),
      10_000,
      "the cancellation at the server",
    );
    expect(cancelled.params).toMatchObject({
      requestId: held[0]!.params!.id,
      reason: expect.stringMatching(GAVE_UP),
    });
    // the client asks nothing more: the gateway tries the fetch again on its own
    await waitFor(
      () => logged().filter((l) => l.method === "held tools/list").length >= 2,
      30_000,
      "the first fetch to be tried again",
    );

    // the server answers promptly again: the catalog is fetched anew and served
    rmSync(hold);
    const served = await waitFor(
      async () => {
        const r = await gw.request("tools/list", {}, 20_000);
        return r.result ? r : undefined;
      },
      30_000,
      "the catalog once the server answers",
    );
    expect(names(served)).toEqual(["echo"]);
    expect((await gw.request("tools/call", { name: "echo", arguments: {} })).result).toBeDefined();
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /did not answer tools\/list within 1 s/.test(gw.stderr()),
      20_000,
      "the gateway's line on the catalog timeout",
    );
    expect(gw.stderr()).toMatch(
      /cannot fetch the tool catalog: the server did not answer tools\/list within 1 s/,
    );
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 60_000);

  it("the late answer of the request the gateway gave up on is dropped: never delivered to the client, no crash", async () => {
    const { gw, hold, logged } = heldLenient();
    await gw.initialize();
    const list = await gw.request("tools/list", {}, 20_000);
    expect(list.error).toMatchObject({ data: { error: "catalog_unavailable" } });
    const [held] = logged().filter((l) => l.method === "held tools/list");
    const seen = gw.messages().length;

    // the server now answers the request it held, after the gateway gave up on it
    rmSync(hold);
    await waitFor(
      () => logged().some((l) => l.method === "answered tools/list" && l.params?.id === held!.params!.id),
      10_000,
      "the server's late answer",
    );
    await waitFor(
      () => /dropped the server's late answer to the gateway's tools\/list/.test(gw.stderr()),
      10_000,
      "the gateway to drop the late answer",
    );
    // nothing reached the client: no answer under any id (the gateway's own next attempt at the
    // catalog may be served meanwhile, and the client told so with list_changed)
    expect(
      gw
        .messages()
        .slice(seen)
        .filter((m) => m.method !== "notifications/tools/list_changed"),
    ).toEqual([]);
    // the gateway serves on: the next list is a fetch of its own
    const served = await waitFor(
      async () => {
        const r = await gw.request("tools/list", {}, 20_000);
        return r.result ? r : undefined;
      },
      30_000,
      "the catalog after the late answer",
    );
    expect(names(served)).toEqual(["echo"]);
    expect(gw.stderr()).not.toMatch(/unknown id|unhandled|TypeError|at .*\.js:\d+/i);
  }, 60_000);

  it("a re-list after list_changed: calls are refused and the re-list retried until the new revision is served", async () => {
    const cat = makeCatalog([ECHO]);
    const hold = join(cat.dir, "hold");
    const gw = rawGateway({
      args: ["--label", "hung-relist", "--approval", "none", "--", ...fixtureCommand("catalog")],
      env: { ...cat.env, FIXTURE_LIST_HOLD: hold, ...TIMEOUT },
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    await gw.initialize();
    expect(names(await gw.request("tools/list"))).toEqual(["echo"]);

    // the server says its tools changed, then holds every tools/list
    writeFileSync(hold, "");
    cat.write([ECHO, ADDED]);
    await waitFor(() => lines(`${hold}.count`).length >= 1, 15_000, "the re-list to reach the server");
    // once the gateway gave up on it, no call is judged against the list the server disowned
    const refused = await waitFor(
      async () => {
        const r = await gw.request("tools/call", { name: "echo", arguments: {} }, 20_000);
        return r.error ? r : undefined;
      },
      30_000,
      "a call refused after the re-list timed out",
    );
    expect(refused.error).toMatchObject({
      code: -32603,
      data: { error: "catalog_unavailable", catalogError: expect.stringMatching(GAVE_UP) },
    });
    // each request given up on was cancelled at the server, and the re-list was tried again
    await waitFor(() => lines(`${hold}.count`).length >= 2, 30_000, "the re-list to be tried again");
    await waitFor(() => lines(`${hold}.cancelled`).length >= 1, 10_000, "a cancellation at the server");
    expect(lines(`${hold}.count`)).toEqual(expect.arrayContaining(lines(`${hold}.cancelled`)));

    // the server answers again: a retry serves the new revision, and the client is told
    rmSync(hold);
    await gw.next((m) => m.method === "notifications/tools/list_changed", 60_000);
    expect(names(await gw.request("tools/list"))).toEqual(["echo", "added"]);
    expect((await gw.request("tools/call", { name: "added", arguments: {} })).result).toBeDefined();
    // the lines come on stderr, what was awaited on another pipe: read in either order
    await waitFor(
      () => /revision 2 is served/.test(gw.stderr()),
      20_000,
      "the gateway's line on the re-list",
    );
    const stderr = gw.stderr();
    expect(stderr).toMatch(/re-listed epoch=\S+ after \d+ failed attempts?: revision 2 is served/);
    expect(stderr).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 90_000);
});
