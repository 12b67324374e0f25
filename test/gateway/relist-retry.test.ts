// A re-list that fails: the server says its tools changed (notifications/tools/list_changed),
// then its tools/list fails. The gateway tries again on its own (src/gateway/catalogSync.ts,
// RELIST_RETRY_*): the server may never say so again. Meanwhile nothing of that epoch's catalog is
// served: the revision the server said is outdated judges no call (catalog_unavailable). Real
// gateway, real fixture server (catalog.mjs on the official SDK), raw client.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type CatalogFile, makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { wholeLines } from "../helpers/completeLines.js";
import { waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const ECHO: ToolDef = { name: "echo", inputSchema: { type: "object" } };
const ADDED: ToolDef = {
  name: "added",
  description: "Added by the change.",
  inputSchema: { type: "object" },
};

/** A gateway in front of catalog.mjs listing `ECHO`; `failing`: FIXTURE_LIST_FAIL (counted). */
function relistGateway(env: Record<string, string>): {
  gw: RawGateway;
  cat: CatalogFile;
  failing: string;
  fails: () => number;
} {
  const cat = makeCatalog([ECHO]);
  const failing = join(cat.dir, "fail");
  const gw = rawGateway({
    args: ["--label", "relist", "--approval", "none", "--", ...fixtureCommand("catalog")],
    env: { ...cat.env, FIXTURE_LIST_FAIL: failing, PORTCULLIS_RESPAWN_BACKOFF_MS: "20", ...env },
  });
  // (run in reverse: the gateway and its server end before their directory is removed)
  cleanup.push(
    () => cat.cleanup(),
    () => gw.close(),
  );
  const fails = () => {
    try {
      return readFileSync(`${failing}.count`, "utf8").split("\n").filter(Boolean).length;
    } catch {
      return 0;
    }
  };
  return { gw, cat, failing, fails };
}

function names(list: WireMessage): string[] {
  return ((list.result as { tools?: { name: string }[] } | undefined)?.tools ?? []).map((t) => t.name);
}

function refusal(m: WireMessage): string | undefined {
  return (m.error?.data as { error?: string } | undefined)?.error;
}

const count = (text: string, re: RegExp) => text.match(new RegExp(re, "g"))?.length ?? 0;

describe("a re-list that fails after the server's list_changed", () => {
  it("is tried again on its own until the new catalog is served, with no further list_changed; lists and calls are refused meanwhile", async () => {
    // after its list_changed, the server fails every tools/list until the test removes `failing`:
    // the call below is made while the re-list cannot succeed, however late it comes (a fixed count
    // of failures let a slow machine's retries heal the catalog before the call was made)
    const { gw, cat, failing, fails } = relistGateway({});
    await gw.initialize();
    expect(names(await gw.request("tools/list"))).toEqual(["echo"]);
    expect((await gw.request("tools/call", { name: "echo", arguments: {} })).result).toBeDefined();

    writeFileSync(failing, "");
    cat.write([ECHO, ADDED]);
    await waitFor(() => fails() >= 1, 15_000, "the re-list after list_changed to fail");
    // deny first: the server said the list the gateway holds is outdated, and the gateway could
    // not learn the new one; no call is judged against the old one
    const refused = await gw.request("tools/call", { name: "echo", arguments: {} });
    expect(refused.error).toMatchObject({
      code: -32603,
      data: { error: "catalog_unavailable", catalogError: expect.stringMatching(/tools unavailable/) },
    });

    // from here on the client asks nothing: the gateway re-lists on its own (again while it still
    // fails, then once the server answers), and says the list changed
    const asked = fails();
    await waitFor(() => fails() >= asked + 1, 30_000, "the failed re-list to be tried again");
    rmSync(failing);
    await gw.next((m) => m.method === "notifications/tools/list_changed", 60_000);
    expect(names(await gw.request("tools/list"))).toEqual(["echo", "added"]);
    const added = await gw.request("tools/call", { name: "added", arguments: {} });
    expect(added.result).toBeDefined();
    expect(cat.records().map((r) => r.tool)).toEqual(["echo", "added"]);

    const stderr = gw.stderr();
    // the server said it once; the gateway said once that it retries, and once that it healed
    expect(count(stderr, /sending notifications\/tools\/list_changed/)).toBe(1);
    expect(count(stderr, /re-listing epoch=\S+ failed: revision 1 is no longer served/)).toBe(1);
    expect(count(stderr, /re-listed epoch=\S+ after \d+ failed attempts?: revision 2 is served/)).toBe(1);
    expect(stderr).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 120_000);

  it("is no longer tried once its epoch ends, nor once the gateway ends: no crash, the next epoch is served", async () => {
    const { gw, cat, failing, fails } = relistGateway({ PORTCULLIS_DEBUG: "1" });
    await gw.initialize();
    expect(names(await gw.request("tools/list"))).toEqual(["echo"]);
    expect((await gw.request("tools/call", { name: "echo", arguments: {} })).result).toBeDefined();
    const pid = cat.records()[0]!.pid;

    // tools/list fails from now on: the re-list after list_changed fails, and so do its retries
    writeFileSync(failing, "");
    cat.write([ECHO, ADDED]);
    await waitFor(() => fails() >= 2, 30_000, "the failed re-list to be tried again");

    // the server dies: its epoch ends, and with it the retries of its re-list
    process.kill(pid, "SIGKILL");
    await waitFor(
      () => /the failed re-list of epoch=\S+ is no longer retried: its epoch ended/.test(gw.stderr()),
      30_000,
      "the retries to stop with the epoch",
    );
    // the server is fixed: the new epoch's catalog is fetched (on the next list) and served
    rmSync(failing);
    const healed = await waitFor(
      async () => {
        const r = await gw.request("tools/list", {}, 20_000);
        return r.result ? r : undefined;
      },
      30_000,
      "the new epoch's catalog",
    );
    expect(names(healed)).toEqual(["echo", "added"]);
    expect((await gw.request("tools/call", { name: "added", arguments: {} })).result).toBeDefined();

    // again, and the client leaves while the retries run: the gateway ends cleanly
    writeFileSync(failing, "");
    const before = fails();
    cat.write([ECHO]);
    await waitFor(() => fails() >= before + 2, 30_000, "the new failed re-list to be tried again");
    gw.closeStdin();
    const exit = await gw.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 120_000);
});

describe("a first catalog fetch of an epoch that fails", () => {
  it("is tried again on its own, on the re-list's timer, until the epoch's catalog is served; lists and calls are refused meanwhile", async () => {
    const { gw, cat, failing, fails } = relistGateway({});
    await gw.initialize();
    expect(names(await gw.request("tools/list"))).toEqual(["echo"]);
    const pid = await serverPid(gw);

    // the server is respawned and its tools/list fails right after its epoch comes up
    writeFileSync(failing, "");
    process.kill(pid, "SIGKILL");
    await waitFor(() => fails() >= 1, 30_000, "the new epoch's first fetch to fail");
    // nothing stale is served: the previous epoch's catalog says nothing of the new code
    const refused = await gw.request("tools/call", { name: "echo", arguments: {} });
    expect(refusal(refused), JSON.stringify(refused)).toBe("catalog_unavailable");
    expect(refused.error?.data).toMatchObject({ catalogError: expect.stringMatching(/tools unavailable/) });

    // from here on the client asks nothing: the gateway fetches again on its own
    const asked = fails();
    await waitFor(() => fails() >= asked + 1, 30_000, "the failed first fetch to be tried again");
    rmSync(failing);
    // once served, the client is told (it was refused the catalog meanwhile)
    await gw.next((m) => m.method === "notifications/tools/list_changed", 60_000);
    expect(names(await gw.request("tools/list"))).toEqual(["echo"]);
    const ran = await gw.request("tools/call", { name: "echo", arguments: {} });
    expect(ran.result, JSON.stringify(ran)).toBeDefined();
    expect(cat.records().map((r) => r.pid)).toEqual([expect.any(Number)]);
    expect(cat.records()[0]!.pid).not.toBe(pid);

    const stderr = gw.stderr();
    expect(count(stderr, /fetching the tool catalog of epoch=\S+ failed/)).toBe(1);
    expect(
      count(stderr, /fetched the tool catalog of epoch=\S+ after \d+ failed attempts?: revision 1 is served/),
    ).toBe(1);
    expect(stderr).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 120_000);

  it("at the first epoch too, and no longer once the connection ends", async () => {
    const { gw, failing, fails } = relistGateway({ PORTCULLIS_DEBUG: "1" });
    // failing from the start: the session's first catalog cannot be fetched
    writeFileSync(failing, "");
    await gw.initialize();
    const list = await gw.request("tools/list");
    expect(refusal(list), JSON.stringify(list)).toBe("catalog_unavailable");
    const asked = fails();
    await waitFor(() => fails() >= asked + 1, 30_000, "the failed first fetch to be tried again");

    // the client leaves while the retries run: they stop, and the gateway ends cleanly
    gw.closeStdin();
    const exit = await gw.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(gw.stderr()).toMatch(
      /the failed fetch of epoch=\S+ is no longer retried: the client closed its input/,
    );
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 120_000);
});

/** The pid of the server serving `gw`'s first epoch, from the catalog fixture's stderr line. */
async function serverPid(gw: RawGateway): Promise<number> {
  // in a line written whole: a chunk can end inside the pid
  const line = await waitFor(
    () => /\[catalog\] pid=(\d+)/.exec(wholeLines(gw.stderr())),
    20_000,
    "the server's pid",
  );
  return Number(line[1]);
}
