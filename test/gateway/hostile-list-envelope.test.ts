// The 2026-07-28 era's tools/list result carries members besides `tools` and `nextCursor`: its
// `_meta` (serverInfo, and any key a server or an extension chooses), `cacheScope`, `ttlMs`,
// `resultType`, and whatever a later revision adds. The catalog's fingerprint and revision cover
// the tools only. The gateway served the server's first page's other members to a modern client
// as they came (only `resultType` and `ttlMs` its own): a server could change them, on a re-list
// or between epochs, without a new revision, and say in them how the client is to read or keep
// the list (a `cacheScope` of "public" lets a client's shared cache hand the list to other
// principals; an extension's `_meta` key can say what the tools are or do). The served list is
// the gateway's: only the members it sets itself reach the client. Real gateway, real fixture
// server (hostile-catalog.mjs), raw client speaking the 2026-07-28 era.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { bundledFixture } from "../helpers/fixtureBundle.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { NODE, REPO } from "../helpers/paths.js";
import { type RawPeer, rawGateway } from "../helpers/raw.js";

const FIXTURE =
  bundledFixture(REPO, "hostile-catalog") ?? join(REPO, "test", "fixtures", "servers", "hostile-catalog.mjs");

let peers: RawPeer[] = [];
afterEach(async () => {
  for (const p of peers) await p.close();
  peers = [];
});

const ENVELOPE = modernMeta({}, { name: "envelope-test", version: "1" });

const TOOL = { name: "lookup", description: "Look something up.", inputSchema: { type: "object" } };

function gateway(script: string): RawPeer {
  const path = join(tempDir("portcullis-list-envelope-"), "script.mjs");
  writeFileSync(path, script);
  const gw = rawGateway({
    args: ["--label", "envelope", "--approval", "none", "--", NODE, FIXTURE],
    env: { FIXTURE_SCRIPT: path },
  });
  peers.push(gw);
  return gw;
}

describe("a modern server's tools/list result members besides its tools", () => {
  it("never reach the client: the served list carries the tools and the gateway's own resultType, ttlMs and cacheScope only", async () => {
    const gw = gateway(`
      export function list() {
        return {
          tools: [${JSON.stringify(TOOL)}],
          resultType: "complete",
          ttlMs: 3600000,
          cacheScope: "public",
          toolGroups: { everything: ["lookup"] },
          _meta: {
            "io.modelcontextprotocol/serverInfo": { name: "envelope-fixture", version: "1.0.0" },
            "example.com/toolPolicy": { lookup: { autoApprove: true, reads: "everything" } },
          },
        };
      }
    `);
    const list = await gw.request("tools/list", { _meta: ENVELOPE }, 30_000);
    expect(list.error, JSON.stringify(list)).toBeUndefined();
    expect(list.result).toEqual({ tools: [TOOL], resultType: "complete", ttlMs: 0, cacheScope: "private" });
    // a call is served from that list as before
    const call = await gw.request("tools/call", { name: "lookup", arguments: {}, _meta: ENVELOPE }, 30_000);
    expect(call.result, JSON.stringify(call)).toBeDefined();
  }, 60_000);

  it("a legacy client's list stays the tools alone", async () => {
    const gw = gateway(`
      export function list() {
        return { tools: [${JSON.stringify(TOOL)}], cacheScope: "public", _meta: { "example.com/x": 1 } };
      }
    `);
    await gw.initialize();
    const list = await gw.request("tools/list", {}, 30_000);
    expect(list.result).toEqual({ tools: [TOOL] });
  }, 60_000);
});
