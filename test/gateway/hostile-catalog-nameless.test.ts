// A tools/list page crowded with entries that are not tools (no string name: `0`, `{}`, `null`).
// They are not kept, so the catalog's limits (MAX_CATALOG_TOOLS, MAX_CATALOG_CHARS) never see
// them; what the gateway does with each must not grow with their number. It said one warning
// line per entry: a page of a million `0` (2 MB of JSON, a 64 MiB line could hold 32 million)
// queued a million lines (80 MB) on stderr, in the gateway's memory; three million took 1.5 GB
// and 12 s of the event loop, ten million ran a gateway with a 256 MB heap out of memory. Real
// gateway, real fixture server (hostile-catalog.mjs).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
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

/** A gateway with a 256 MB heap in front of hostile-catalog.mjs running `script`. */
function gateway(script: string): RawPeer {
  const path = join(tempDir("portcullis-hostile-catalog-"), "script.mjs");
  writeFileSync(path, script);
  const gw = rawGateway({
    args: ["--label", "nameless", "--approval", "none", "--", NODE, FIXTURE],
    env: { FIXTURE_SCRIPT: path, NODE_OPTIONS: "--max-old-space-size=256" },
  });
  peers.push(gw);
  return gw;
}

const ENTRIES = 1_000_000;

describe("a tools/list page of a million entries that are not tools", () => {
  it("is served without them, said in one warning line, and the gateway (heap capped at 256 MB) lives on", async () => {
    const gw = gateway(`
      const junk = Array(${ENTRIES}).fill("0").join(",");
      export function list() {
        return '{"tools":[' + junk + ',{"name":"kept","inputSchema":{"type":"object"}}]}';
      }
    `);
    await gw.initialize();
    const list = await gw.request("tools/list", undefined, 120_000);
    expect(list.result).toEqual({ tools: [{ name: "kept", inputSchema: { type: "object" } }] });
    expect((await gw.request("ping", undefined, 60_000)).result).toEqual({});
    const said = (): string[] =>
      gw
        .stderr()
        .split("\n")
        .filter((l) => /without a (string )?name/.test(l));
    await waitFor(() => said().length > 0, 10_000, "the warning about the entries without a name");
    // the line names how many were ignored, once for the whole fetch
    expect(said()).toEqual([expect.stringContaining(`ignored ${ENTRIES} entries`)]);
    expect(gw.stderr().length).toBeLessThan(64 * 1024);
  }, 180_000);
});
