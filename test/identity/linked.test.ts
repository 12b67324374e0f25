// Packages linked into node_modules from outside every node_modules (npm/yarn/pnpm workspaces,
// `npm link`, `file:` dependencies): their code is part of the identity and is watched. Real
// files, real symlinks as npm workspaces create them.
import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  captureStaticIdentity,
  changedParts,
  DigestCache,
  identityDigest,
  type StaticIdentity,
  watchedPaths,
} from "../../src/identity/index.js";
import { MAX_LINKED_FILES } from "../../src/identity/linked.js";
import { watcherPerTest } from "../helpers/changes.js";
import { put, removeDir, specFor, tempDir } from "./fixtures.js";

/**
 * <root>/package.json (workspaces), package-lock.json, node_modules/{dep, @acme/core ->
 * ../../packages/core, @acme/server -> ../../packages/server}, packages/core/{dist,src},
 * packages/server/dist/server.js: what `npm install` makes of an npm workspaces monorepo.
 */
function monorepo(root: string): { server: string; core: string } {
  put(root, "package.json", JSON.stringify({ name: "acme", private: true, workspaces: ["packages/*"] }));
  put(root, "package-lock.json", JSON.stringify({ name: "acme", lockfileVersion: 3 }));
  put(root, "node_modules/dep/package.json", JSON.stringify({ name: "dep", main: "index.js" }));
  put(root, "node_modules/dep/index.js", "module.exports = 1;\n");
  mkdirSync(join(root, "node_modules/@acme"), { recursive: true });
  symlinkSync("../../packages/core", join(root, "node_modules/@acme/core"));
  symlinkSync("../../packages/server", join(root, "node_modules/@acme/server"));
  const core = join(root, "packages/core");
  put(core, "package.json", JSON.stringify({ name: "@acme/core", main: "dist/index.js" }));
  put(core, "dist/index.js", "exports.revision = 'A';\n");
  put(core, "dist/lib/util.js", "exports.util = 1;\n");
  put(core, "src/index.ts", "export const revision = 'A';\n");
  const server = join(root, "packages/server");
  put(server, "package.json", JSON.stringify({ name: "@acme/server", dependencies: { "@acme/core": "*" } }));
  put(server, "dist/server.js", "require('@acme/core');\nprocess.stdin.resume();\n");
  return { server, core };
}

const capture = (cwd: string, cache = new DigestCache(null)) =>
  captureStaticIdentity(specFor(cwd, "node", ["dist/server.js"]), cache);

describe("linked packages", () => {
  let root: string;
  beforeAll(() => {
    root = tempDir("linked");
  });
  afterAll(() => removeDir(root));

  it("digests a workspace package linked into node_modules, and its rebuild changes the identity", async () => {
    const { server, core } = monorepo(join(root, "ws"));
    const cache = new DigestCache(null);
    const a = await capture(server, cache);
    expect(a.dependencyTree!.root).toBe(join(root, "ws/node_modules"));
    const more = a.dependencyTree!.more!;
    // the server's own package is linked too (npm links every workspace): named, not followed
    expect(more.map((m) => [m.path, m.kind, m.sha256 === null])).toEqual([
      [".", "package", true],
      [core, "package", false],
    ]);
    expect(more[0]!.skipped).toBe("the server's own package");
    expect(more[1]!.files).toBe(4); // package.json, dist/index.js, dist/lib/util.js, src/index.ts

    // same files: the same digest (also from the cache); the server writing its state in its own
    // package, or a test run writing coverage in core, is not a change of code
    put(server, "data/state.json", "{}");
    put(core, "coverage/lcov.info", "TN:\n");
    const again = await capture(server, cache);
    expect(identityDigest(again, [])).toBe(identityDigest(a, []));

    put(core, "dist/lib/util.js", "exports.util = 2;\n"); // a rebuild, two levels down
    const b = await capture(server, cache);
    expect(b.dependencyTree!.sha256).toBe(a.dependencyTree!.sha256); // the links are unchanged
    expect(identityDigest(b, [])).not.toBe(identityDigest(a, []));
    expect(changedParts(a, b)).toEqual([`linked package ${core} (4 files)`]);
  });

  it("digests the linked package's own node_modules, once, and not the workspace root's twice", async () => {
    const { server, core } = monorepo(join(root, "own"));
    put(core, "node_modules/only-core/index.js", "module.exports = 'v1';\n");
    const a = await capture(server);
    const paths = a.dependencyTree!.more!.map((m) => m.path);
    expect(paths).toContain(join(core, "node_modules"));
    expect(paths.filter((p) => p.endsWith("/node_modules"))).toEqual([join(core, "node_modules")]);
    put(core, "node_modules/only-core/index.js", "module.exports = 'v2';\n");
    const b = await capture(server);
    expect(changedParts(a, b)).toEqual([`dependency tree ${join(core, "node_modules")} (1 files)`]);
  });

  it("follows an npm link to another checkout, with that checkout's node_modules", async () => {
    const app = join(root, "app");
    put(app, "package-lock.json", "{}");
    put(app, "dist/server.js", "require('lib');\n");
    mkdirSync(join(app, "node_modules"), { recursive: true });
    const lib = join(root, "elsewhere/lib");
    put(lib, "package-lock.json", "{}");
    put(lib, "index.js", "module.exports = require('lib-dep');\n");
    put(lib, "node_modules/lib-dep/index.js", "module.exports = 1;\n");
    symlinkSync(lib, join(app, "node_modules/lib"));
    const a = await capture(app);
    expect(a.dependencyTree!.more!.map((m) => [m.path, m.kind, m.files])).toEqual([
      [lib, "package", 2],
      [join(lib, "node_modules"), "modules", 1],
    ]);
    put(lib, "node_modules/lib-dep/index.js", "module.exports = 2;\n");
    const b = await capture(app);
    expect(identityDigest(b, [])).not.toBe(identityDigest(a, []));
  });

  it("does not follow a link to an ancestor (a loop), and says so in the record", async () => {
    const app = join(root, "loop");
    put(app, "package-lock.json", "{}");
    put(app, "dist/server.js", "1;\n");
    mkdirSync(join(app, "node_modules"), { recursive: true });
    symlinkSync("..", join(app, "node_modules/self"));
    symlinkSync("/", join(app, "node_modules/fsroot"));
    const s = await capture(app);
    const more = s.dependencyTree!.more!;
    expect(more.map((m) => [m.path, m.sha256])).toEqual([
      [".", null],
      ["/", null],
    ]);
    expect(more[0]!.skipped).toMatch(/ancestor/);
    expect(watchedPaths(s).dirs).toEqual([{ path: join(app, "node_modules"), depth: 2, kind: "modules" }]);
  });

  it("leaves out a linked directory over the bound, naming it in the record, unwatched", async () => {
    const app = join(root, "huge");
    put(app, "package-lock.json", "{}");
    put(app, "dist/server.js", "1;\n");
    mkdirSync(join(app, "node_modules"), { recursive: true });
    const big = join(root, "big");
    for (let d = 0; d <= MAX_LINKED_FILES / 1000; d++) {
      mkdirSync(join(big, `d${d}`), { recursive: true });
      for (let f = 0; f < 1000; f++) put(big, `d${d}/f${f}`, "");
    }
    symlinkSync(big, join(app, "node_modules/big"));
    const s = await capture(app);
    const [m] = s.dependencyTree!.more!;
    expect(m).toMatchObject({ path: big, kind: "package", sha256: null });
    expect(m!.skipped).toBe(`more than ${MAX_LINKED_FILES} files`);
    expect(watchedPaths(s).dirs.map((d) => d.path)).toEqual([join(app, "node_modules")]);
  });

  it("keeps the record of a tree without links as it was (no `more`)", async () => {
    const app = join(root, "plain");
    put(app, "package-lock.json", "{}");
    put(app, "dist/server.js", "1;\n");
    put(app, "node_modules/x/index.js", "1;\n");
    symlinkSync("../x/index.js", join(root, "plain/node_modules/x-bin"));
    const s = await capture(app);
    expect(s.dependencyTree).toEqual({ root: "node_modules", files: 2, sha256: expect.any(String) });
  });
});

describe("watching linked packages", () => {
  let root: string;
  let s: StaticIdentity;
  let core: string;
  const { watch, next } = watcherPerTest(100);

  beforeAll(async () => {
    root = tempDir("linked-watch");
    const m = monorepo(join(root, "ws"));
    core = m.core;
    s = await capture(m.server);
  });
  afterAll(() => removeDir(root));

  it("watches the linked package's directory to any depth, its node_modules aside", async () => {
    expect(watchedPaths(s).dirs).toContainEqual({ path: core, depth: 20, kind: "package" });
    await watch(s);
    put(core, "dist/lib/util.js", "exports.util = 3;\n");
    expect(await next()).toEqual([join(core, "dist/lib/util.js")]);
    put(core, "dist/index.js", "exports.revision = 'B';\n");
    expect(await next()).toEqual([join(core, "dist/index.js")]);
  });
});
