// The digest cache is a file any process of the user can write. A forged entry that gives a
// changed file's new (size, mtime, ctime, inode) the old file's digest must not make changed code
// pass for the old code: the server's own files (entry, wrappers, lockfile, identity inputs) are
// hashed on every capture. Real gateways, a real cache file forged with portcullis's own class.
import { createHash } from "node:crypto";
import { appendFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DigestCache, RACY_MS } from "../../src/identity/cache.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { makeProject, type Project } from "../helpers/project.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

interface FileDigest {
  path: string;
  sha256: string;
}
interface Recorded {
  identityDigest: string;
  entry: FileDigest | null;
  wrappers: FileDigest[];
  lockfile: FileDigest | null;
  identityInputs: { files: number; sha256: string } | null;
}

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** One launch through the project's wrapper script; returns the execution record it made. */
async function launch(project: Project, stateDir: string, cacheDir: string): Promise<Recorded> {
  const gw = rawGateway({
    args: ["--label", "inventory", "--approval", "none", "--watch", "plugins/*.js", "--", project.wrapper],
    cwd: project.dir,
    env: { ...project.env, PORTCULLIS_CACHE_DIR: cacheDir },
    stateDir,
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  const r = await runCli(["status", "--json"], { stateDir });
  expect(r.code).toBe(0);
  const row = (JSON.parse(r.stdout) as { gateways: { record: Recorded }[] }).gateways[0]!;
  gw.closeStdin();
  await gw.exited;
  return row.record;
}

/** Writes into the shared cache: `path` keyed by its current status, carrying `oldSha`. */
function forge(cacheDir: string, path: string, oldSha: string): void {
  const cache = new DigestCache(join(cacheDir, "digests.bin"));
  const st = statSync(path);
  const later = Math.max(st.mtimeMs, st.ctimeMs) + RACY_MS + 1; // past the "too recent" window
  cache.storeFile(
    path,
    { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino, sha: oldSha },
    later,
  );
  expect(cache.save()).toBe(true);
  expect(new DigestCache(join(cacheDir, "digests.bin")).cachedDigest(path)).toBe(oldSha);
}

describe("a forged digest cache entry", () => {
  it("for the changed entry, wrapper, lockfile and identity input: each is hashed anyway, and the identity changes", async () => {
    const project = makeProject("A");
    const stateDir = newStateDir();
    const cacheDir = tempDir("portcullis-forged-cache-");
    cleanup.push(
      () => project.cleanup(),
      () => removeDir(stateDir),
      () => removeDir(cacheDir),
    );
    const plugin = join(project.dir, "plugins", "plugin.js");
    mkdirSync(join(project.dir, "plugins"));
    writeFileSync(plugin, "export const v = 1;\n");
    const before = await launch(project, stateDir, cacheDir);
    expect(before.entry?.sha256).toBe(sha(project.entry));
    expect(before.identityInputs?.files).toBe(1);

    // The agent changes the server's own files, then tells the cache they are the old bytes.
    const files = [project.entry, project.wrapper, project.lockfile, plugin];
    const old = new Map(files.map((f) => [f, sha(f)]));
    project.rebuild("B");
    appendFileSync(project.wrapper, "# changed\n");
    appendFileSync(project.lockfile, "\n");
    writeFileSync(plugin, "export const v = 2;\n");
    for (const f of files) forge(cacheDir, f, old.get(f)!);

    const after = await launch(project, stateDir, cacheDir);
    expect(after.entry?.sha256).toBe(sha(project.entry));
    expect(after.entry?.sha256).not.toBe(before.entry?.sha256);
    const wrapper = after.wrappers.find((w) => project.wrapper.endsWith(w.path));
    expect(wrapper?.sha256).toBe(sha(project.wrapper));
    expect(after.lockfile?.sha256).toBe(sha(project.lockfile));
    expect(after.identityInputs?.sha256).not.toBe(before.identityInputs?.sha256);
    expect(after.identityDigest).not.toBe(before.identityDigest);
    // The capture's own digests replaced the forged ones in the cache.
    const cache = new DigestCache(join(cacheDir, "digests.bin"));
    for (const f of files) expect(cache.cachedDigest(f) ?? sha(f)).toBe(sha(f));
  });
});
