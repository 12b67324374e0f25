// A capture that runs while the server is already starting (src/supervisor/launchCapture.ts) must
// say when a file it digested changed after the spawn: the process may have loaded other bytes.
import { utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type ChangeProbe, captureStaticIdentity, DigestCache } from "../../src/identity/index.js";
import {
  AGE_MS,
  makeProject,
  NODE,
  put,
  removeDir,
  sha256File,
  sleep,
  specFor,
  tempDir,
} from "./fixtures.js";

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

  it("files warmed alongside the capture (the client's executables) are digested into the cache, change nothing in the identity, and are never a reason to start again", async () => {
    const { root, cache } = setup();
    const spec = specFor(root, NODE, ["dist/server.js"]);
    const elsewhere = tempDir("portcullis-probe-client-");
    dirs.push(elsewhere);
    const client = put(elsewhere, "bin/agent-host", "#!/bin/sh\necho host\n", 0o755);
    await sleep(AGE_MS); // out of the cache's racy window, like a host binary installed earlier

    const plain = await captureStaticIdentity(spec, cache());
    const c = cache();
    const warmed = await captureStaticIdentity(spec, c, undefined, [client, NODE]);
    expect(warmed).toEqual(plain);
    expect(c.cachedDigest(client)).toBe(sha256File(client));
    expect(new DigestCache(c.file).cachedDigest(client)).toBe(sha256File(client)); // saved

    // the client's file changes after the spawn: that says nothing about the server's bytes
    const probe: ChangeProbe = { since: await markNow() };
    const now = new Date();
    utimesSync(client, now, now);
    await captureStaticIdentity(spec, cache(), probe, [client]);
    expect(probe.touched).toBeNull();
  });
});
