// A catalog too large to keep: every page of a tools/list is kept until the last one came, so
// pagination without end (or with pages as large as a message may be) is cut off by cumulative
// limits on the tools and their size (and empty pages by their number), and answered
// catalog_unavailable naming the limit, before it can exhaust the gateway's memory. Real gateway
// (its heap capped), real fixture server (unruly.mjs, endless mode), raw client.
import { afterEach, describe, expect, it } from "vitest";
import { MAX_CATALOG_CHARS, MAX_CATALOG_TOOLS } from "../../src/gateway/catalogSync.js";
import type { WireMessage } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawPeer, rawGateway } from "../helpers/raw.js";

let peers: RawPeer[] = [];
afterEach(async () => {
  for (const p of peers) await p.close();
  peers = [];
});

/** A gateway with a 256 MB heap in front of a server whose pages never end. */
function endless(pageTools: number, pad: number): RawPeer {
  const gw = rawGateway({
    args: ["--label", "unruly", "--approval", "none", "--", ...fixtureCommand("unruly")],
    env: {
      FIXTURE_MODE: "endless",
      FIXTURE_PAGE_TOOLS: String(pageTools),
      FIXTURE_PAD: String(pad),
      NODE_OPTIONS: "--max-old-space-size=256",
    },
  });
  peers.push(gw);
  return gw;
}

function unavailable(m: WireMessage, limit: RegExp): void {
  expect(m.error).toMatchObject({
    code: -32603,
    data: { error: "catalog_unavailable", catalogError: expect.stringMatching(limit) },
  });
}

describe("a tool list whose pages never end", () => {
  it("pages of a megabyte: refused at the size limit, and the gateway (heap capped at 256 MB) lives on", async () => {
    const gw = endless(4, 256 * 1024);
    await gw.initialize();
    // unbounded, the gateway kept every page and aborted out of memory long before 1000 pages
    const list = await gw.request("tools/list", undefined, 60_000);
    unavailable(
      list,
      new RegExp(`too large \\(over ${MAX_CATALOG_CHARS / 1024 / 1024} MiB of tool definitions`),
    );
    expect((await gw.request("ping")).result).toEqual({});
    unavailable(await gw.request("tools/call", { name: "p1_0", arguments: {} }, 60_000), /too large/);
  }, 90_000);

  it("pages of a thousand small tools: refused at the tool limit, not after a thousand pages", async () => {
    const gw = endless(1000, 0);
    await gw.initialize();
    const list = await gw.request("tools/list", undefined, 60_000);
    unavailable(list, new RegExp(`too large \\(over ${MAX_CATALOG_TOOLS} tools after 11 pages`));
    expect((await gw.request("ping")).result).toEqual({});
  }, 90_000);

  it("empty pages, each with a fresh cursor: neither limit grows, so the fetch is refused after 1000 pages, not at the deadline", async () => {
    // no tool and a short cursor per page: 32 MiB of cursors is millions of pages, and the fetch's
    // deadline two minutes of a loop; the page count (MAX_PAGES, catalogSync.ts) ends it first
    const gw = endless(0, 0);
    await gw.initialize();
    const list = await gw.request("tools/list", undefined, 30_000);
    unavailable(list, /pagination does not end \(over 1000 pages\)/);
    expect((await gw.request("ping")).result).toEqual({});
  }, 60_000);
});
