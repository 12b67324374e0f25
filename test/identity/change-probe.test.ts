// A capture that runs while the server is already starting (src/supervisor/supervisor.ts) must
// say when a file it digested changed after the spawn: the process may have loaded other bytes.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type ChangeProbe, captureStaticIdentity, DigestCache } from "../../src/identity/index.js";
import { makeProject, NODE, put, removeDir, sleep, specFor, tempDir } from "./fixtures.js";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) removeDir(d);
});

function setup(): { root: string; cache: () => DigestCache } {
  const root = makeProject(tempDir("portcullis-probe-"));
  const cacheDir = tempDir("portcullis-probe-cache-");
  dirs.push(root, cacheDir);
  return { root, cache: () => new DigestCache(join(cacheDir, "digest-cache.bin")) };
}

/** A time after which the next write is stamped (ctime comes from a coarse clock). */
async function markNow(): Promise<number> {
  await sleep(30);
  const t = Date.now();
  await sleep(30);
  return t;
}

describe("a capture's change probe", () => {
  it("reports nothing when no digested file changed after the given time", async () => {
    const { root, cache } = setup();
    const spec = specFor(root, NODE, ["dist/server.js"]);
    await captureStaticIdentity(spec, cache());
    const probe: ChangeProbe = { since: await markNow() };
    await captureStaticIdentity(spec, cache(), probe);
    expect(probe.touched).toBeNull();
  });

  it("names a dependency rewritten after the given time, found by the warm cache's check", async () => {
    const { root, cache } = setup();
    const spec = specFor(root, NODE, ["dist/server.js"]);
    await captureStaticIdentity(spec, cache()); // warm: the next capture only lstat's the files
    const probe: ChangeProbe = { since: await markNow() };
    const util = join(root, "node_modules/pkg/lib/util.js");
    writeFileSync(util, "module.exports = { answer: 43 };\n");
    await captureStaticIdentity(spec, cache(), probe);
    expect(probe.touched).toBe(util);
  });

  it("names a change seen while hashing cold, and one of the entry itself", async () => {
    const { root, cache } = setup();
    const spec = specFor(root, NODE, ["dist/server.js"]);
    const since = await markNow();
    put(root, "node_modules/pkg/lib/extra.js", "module.exports = 1;\n");
    const cold: ChangeProbe = { since };
    await captureStaticIdentity(spec, cache(), cold);
    expect(cold.touched).toBe(join(root, "node_modules/pkg/lib"));

    const later = await markNow();
    writeFileSync(join(root, "dist/server.js"), "// rebuilt\nprocess.stdin.resume();\n");
    const entry: ChangeProbe = { since: later };
    await captureStaticIdentity(spec, cache(), entry);
    expect(entry.touched).toBe(join(root, "dist/server.js"));
  });
});
