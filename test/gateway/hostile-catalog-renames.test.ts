// A re-list that renames every tool of a large catalog whose tools share one input schema. Each
// new revision is diffed against the one before (its catalog_revised record, and onExpand), and
// the diff pairs removed tools with added ones of a matching schema as rename candidates: every
// removed tool against every added one of the same schema, so 4,000 tools renamed made 16 million
// pairs, weighed and kept on the event loop (about 90 s and 1.5 GB per diff on the development
// VM). Meanwhile the gateway answered nothing; its heap capped at 256 MB, it ran out of memory.
// Real gateway, real fixture server (hostile-catalog.mjs).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { bundledFixture } from "../helpers/fixtureBundle.js";
import type { WireMessage } from "../helpers/gateway.js";
import { NODE, REPO } from "../helpers/paths.js";
import { type RawPeer, rawGateway } from "../helpers/raw.js";

const FIXTURE =
  bundledFixture(REPO, "hostile-catalog") ?? join(REPO, "test", "fixtures", "servers", "hostile-catalog.mjs");

let peers: RawPeer[] = [];
afterEach(async () => {
  for (const p of peers) await p.close();
  peers = [];
});

const TOOLS = 4_000;

describe("a re-list that renames every one of 4,000 tools of one input schema", () => {
  it("is diffed, recorded and served; the client is told; the gateway (heap capped at 256 MB) answers on", async () => {
    const path = join(tempDir("portcullis-hostile-catalog-"), "script.mjs");
    // the first tools/list gives old_*, every later one new_*; a call of "rename" says the list changed
    writeFileSync(
      path,
      `
      const tools = (prefix) =>
        Array.from({ length: ${TOOLS} }, (_, i) => ({ name: prefix + i, inputSchema: { type: "object" } }));
      export function list(_params, state) {
        return { tools: tools(state.lists === 1 ? "old_" : "new_") };
      }
      export function call(params, _state, send) {
        if (params.name === "old_0") setImmediate(() => send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" }));
        return { content: [{ type: "text", text: "ran " + params.name }] };
      }
    `,
    );
    const gw = rawGateway({
      args: ["--label", "renames", "--approval", "none", "--", NODE, FIXTURE],
      env: { FIXTURE_SCRIPT: path, NODE_OPTIONS: "--max-old-space-size=256" },
    });
    peers.push(gw);
    await gw.initialize();
    const first = await gw.request("tools/list", undefined, 60_000);
    expect((first.result as { tools: unknown[] }).tools).toHaveLength(TOOLS);
    const ran = await gw.request("tools/call", { name: "old_0", arguments: {} }, 60_000);
    expect(ran.result).toMatchObject({ content: [{ text: "ran old_0" }] });
    // the new revision is told to the client once it is recorded (its diff made), or the gateway died
    const told = await Promise.race([
      gw.next((m: WireMessage) => m.method === "notifications/tools/list_changed", 170_000),
      gw.exited.then((e) => ({ exited: e })),
    ]);
    expect(told).toMatchObject({ method: "notifications/tools/list_changed" });
    expect((await gw.request("ping", undefined, 60_000)).result).toEqual({});
    const second = await gw.request("tools/list", undefined, 60_000);
    const names = (second.result as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names).toHaveLength(TOOLS);
    expect(names.every((n) => n.startsWith("new_"))).toBe(true);
  }, 240_000);
});
