// A relative include pattern that opens with a group (`{plugins,lib}/**`) is watched from each
// alternative's own base, plugins/ and lib/, not from the whole working directory: that watched
// every build output and cache of the project (each directory a watch) though only the two can
// hold a match. Nothing is missed: a file created in either, also in a base created after the
// start, is reported. A group that repeats (`*(…)`) keeps the base before it. The real capture and
// the real watcher (inotify), the real glob library.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  captureStaticIdentity,
  DigestCache,
  type StaticIdentity,
  watchedPaths,
} from "../../src/identity/index.js";
import { watcherPerTest } from "../helpers/changes.js";
import { makeProject, put, removeDir, specFor, tempDir } from "./fixtures.js";

describe("an include pattern opening with a group", () => {
  let root: string;
  let dir: string;
  const { watch, next } = watcherPerTest(100);

  const capture = (include: string[]): Promise<StaticIdentity> =>
    captureStaticIdentity(specFor(dir, "node", ["dist/server.js"], { include }), new DigestCache(null));
  const includeDirs = (s: StaticIdentity) => watchedPaths(s).dirs.filter((d) => d.kind === "include");

  beforeAll(() => {
    root = tempDir("include-group-watched");
    dir = makeProject(join(root, "app"));
    put(dir, "plugins/a.mjs", "export default 1;\n");
    put(dir, "build/cache/x.bin", "");
  });
  afterAll(() => removeDir(root));

  it("is watched from each alternative's base, not the working directory", async () => {
    const s = await capture(["{plugins,lib/{x,y}}/**", "@(conf|etc)/*.json", `${root}/ext/{a,b}/*.js`]);
    // (a directory reached through a link on the walk is watched too: none under root here)
    expect(includeDirs(s).filter((d) => d.path.startsWith(root))).toEqual([
      { path: join(dir, "plugins"), depth: 20, kind: "include" },
      { path: join(dir, "lib/x"), depth: 20, kind: "include" },
      { path: join(dir, "lib/y"), depth: 20, kind: "include" },
      { path: join(dir, "conf"), depth: 0, kind: "include" },
      { path: join(dir, "etc"), depth: 0, kind: "include" },
      { path: join(root, "ext/a"), depth: 0, kind: "include" },
      { path: join(root, "ext/b"), depth: 0, kind: "include" },
    ]);
  });

  it("a repeating group keeps the base before it", async () => {
    const s = await capture(["plugins/*(a|b)/**"]);
    expect(includeDirs(s).filter((d) => d.path.startsWith(root))).toEqual([
      { path: join(dir, "plugins"), depth: 20, kind: "include" },
    ]);
  });

  it("misses nothing: a file in either base is reported, in one created after the start too", async () => {
    const s = await capture(["{plugins,lib}/**"]);
    await watch(s);
    put(dir, "plugins/b.mjs", "export default 2;\n");
    expect(await next()).toEqual(["plugins/b.mjs"]);
    put(dir, "lib/c.mjs", "export default 3;\n");
    expect(await next()).toEqual(["lib/c.mjs"]);
  });
});
