import { cpSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  captureStaticIdentity,
  DigestCache,
  identityDigest,
  type StaticIdentity,
  watchedPaths,
} from "../../src/identity/index.js";
import { watcherPerTest } from "../helpers/changes.js";
import { makeProject, NODE, put, removeDir, sleep, specFor, tempDir } from "./fixtures.js";

describe("artifact watcher", () => {
  let root: string;
  let dir: string;
  let s: StaticIdentity;
  const { seen, start, watch, next, stop } = watcherPerTest(100);
  /**
   * Once the watcher has read every event of what was done in `app` so far: `seen` emptied.
   * `package-lock.json` (watched) is written as a mark and the batches up to the one that reports
   * it are taken: every watch is on the one inotify queue of this process, read in order, so an
   * event of an earlier step came before the mark's, in its batch or in one before it, never after
   * it (a fixed sleep was a guess at how long that takes).
   */
  let marks = 0;
  const settled = async (app: string) => {
    put(app, "package-lock.json", JSON.stringify({ lockfileVersion: 3, mark: ++marks }));
    while (!(await next()).includes("package-lock.json"));
    seen.length = 0;
  };

  beforeAll(async () => {
    root = tempDir("watch");
    dir = makeProject(join(root, "app"));
    put(dir, "config/tools.json", "{}");
    s = await captureStaticIdentity(
      specFor(dir, "node", ["dist/server.js"], { include: ["config/*.json"] }),
      new DigestCache(null),
    );
  });
  afterAll(() => removeDir(root));

  it("watches the entry, wrappers, lockfile, executable, include bases and node_modules to a bounded depth", () => {
    const w = watchedPaths(s);
    expect(w.files).toEqual([join(dir, "dist/server.js"), join(dir, "package-lock.json"), NODE]);
    expect(w.dirs).toEqual([
      { path: join(dir, "node_modules"), depth: 2, kind: "modules" },
      { path: join(dir, "config"), depth: 0, kind: "include" },
    ]);
  });

  it("reports a change to the entry and to a file inside node_modules/pkg/, debounced", async () => {
    await watch(s);

    put(dir, "dist/server.js", "// rebuilt\nprocess.stdin.resume();\n");
    put(dir, "dist/server.js", "// rebuilt twice\nprocess.stdin.resume();\n");
    expect(await next()).toEqual(["dist/server.js"]);

    put(dir, "node_modules/pkg/index.js", "module.exports = 'patched';\n");
    expect(await next()).toEqual(["node_modules/pkg/index.js"]);

    put(dir, "node_modules/@scope/deep/extra.js", "1;\n");
    expect(await next()).toEqual(["node_modules/@scope/deep/extra.js"]);

    put(dir, "config/tools.json", '{"tools": 2}');
    put(dir, "config/notes.txt", "not an input");
    expect(await next()).toEqual(["config/tools.json"]);
  });

  it("reports an entry replaced by a rename (how builds and editors write), and again after it", async () => {
    await watch(s);
    for (const round of [1, 2]) {
      put(dir, `dist/.server.js.tmp${round}`, `// build ${round}\nprocess.stdin.resume();\n`);
      renameSync(join(dir, `dist/.server.js.tmp${round}`), join(dir, "dist/server.js"));
      expect(await next()).toEqual(["dist/server.js"]);
    }
  });

  it("watches a package installed after it started, and what changes inside it later", async () => {
    await watch(s);
    put(dir, "node_modules/late/lib/index.js", "module.exports = 1;\n");
    expect((await next()).every((p) => p === "node_modules/late" || p.startsWith("node_modules/late/"))).toBe(
      true,
    );
    await settled(dir); // the install's events are all in
    put(dir, "node_modules/late/lib/index.js", "module.exports = 2;\n");
    expect(await next()).toEqual(["node_modules/late/lib/index.js"]);
    rmSync(join(dir, "node_modules/late"), { recursive: true });
    expect((await next()).some((p) => p.startsWith("node_modules/late"))).toBe(true);
  });

  it("watches a package and node_modules installed again (removed and created anew, or renamed in), and what changes in them later", async () => {
    await watch(s);
    // a package removed, then installed anew (npm replacing it)
    const pkg = join(dir, "node_modules/pkg");
    cpSync(pkg, join(root, "pkg-copy"), { recursive: true });
    rmSync(pkg, { recursive: true });
    await next(); // the removal handled before the new one comes
    cpSync(join(root, "pkg-copy"), pkg, { recursive: true });
    await next();
    await settled(dir); // the install's events are all in
    put(dir, "node_modules/pkg/lib/util.js", "module.exports = { answer: 43 };\n");
    expect(await next()).toEqual(["node_modules/pkg/lib/util.js"]);

    // node_modules removed, then installed again (`rm -rf node_modules && npm ci`)
    const nm = join(dir, "node_modules");
    cpSync(nm, join(root, "nm-copy"), { recursive: true, verbatimSymlinks: true });
    rmSync(nm, { recursive: true });
    await next(); // the removal handled before the new one comes
    cpSync(join(root, "nm-copy"), nm, { recursive: true, verbatimSymlinks: true });
    await next();
    await settled(dir);
    put(dir, "node_modules/pkg/index.js", "module.exports = 'after reinstall';\n");
    expect(await next()).toEqual(["node_modules/pkg/index.js"]);

    // a whole node_modules swapped in by a rename: no event inside either tree, only its name
    cpSync(nm, join(root, "nm-next"), { recursive: true, verbatimSymlinks: true });
    renameSync(nm, join(root, "nm-old"));
    renameSync(join(root, "nm-next"), nm);
    expect(await next()).toEqual(["node_modules"]);
    await settled(dir);
    put(dir, "node_modules/@scope/deep/package.json", JSON.stringify({ name: "@scope/deep", v: 2 }));
    expect(await next()).toEqual(["node_modules/@scope/deep/package.json"]);
  });

  /**
   * A watcher of `app` (captured with `include`) and `byWatcher(rel, prep)`: `prep` done, then `rel`
   * written, until one write is reported by an inotify event and not by the stat poll (`unseen`).
   * The poll's round can land between a write and its event (in the same turn of the event loop),
   * rarely, so a write is tried up to three times; without a live watch every one is the poll's.
   */
  const watchedApp = async (app: string, include: string[]) => {
    const p = await captureStaticIdentity(
      specFor(app, "node", ["dist/server.js"], { include }),
      new DigestCache(null),
    );
    const unseen: number[] = [];
    await watch(p, { unseen: (since) => unseen.push(since) });
    return async (rel: string, prep: () => void = () => {}): Promise<void> => {
      for (let round = 1; round <= 3; round++) {
        await settled(app); // what the last step set going is over
        unseen.length = 0;
        prep();
        put(app, rel, `// write ${round}\n`);
        expect(await next()).toContain(rel);
        if (unseen.length === 0) return;
      }
      expect.fail(`every write of ${rel} was seen by the stat poll only`);
    };
  };
  /** `name` in `app` replaced by a copy renamed into its place (the old one moved away) */
  const swapIn = (app: string, name: string) => () => {
    rmSync(join(app, `${name}-old`), { recursive: true, force: true });
    cpSync(join(app, name), join(app, `${name}-next`), { recursive: true });
    renameSync(join(app, name), join(app, `${name}-old`));
    renameSync(join(app, `${name}-next`), join(app, name));
  };

  it("watches the entry's directory again after `rm -rf dist && tsc` or a rename, and a file's directories created after the start", async () => {
    const app = makeProject(join(root, "rebuilt-app"));
    const byWatcher = await watchedApp(app, ["extras/conf/plugin.json"]);
    // the entry's directory removed and written again, as a build emptying its out dir does, then
    // a rebuild in it
    await byWatcher("dist/server.js", () => rmSync(join(app, "dist"), { recursive: true }));
    await byWatcher("dist/server.js");
    // the directory replaced by a rename
    await byWatcher("dist/server.js", swapIn(app, "dist"));
    await byWatcher("dist/server.js");
    // a file (a plain include path) whose directories do not exist at the start, then do, then are
    // created again
    await byWatcher("extras/conf/plugin.json");
    await byWatcher("extras/conf/plugin.json");
    await byWatcher("extras/conf/plugin.json", () => rmSync(join(app, "extras"), { recursive: true }));
    await byWatcher("extras/conf/plugin.json");
  }, 60_000);

  it("reports a write in an include base removed and created again or replaced by a rename, and watches it again", async () => {
    const app = makeProject(join(root, "rebuilt-config"));
    put(app, "config/tools.json", "{}");
    put(app, "plugins/a/one.mjs", "export {};\n");
    const byWatcher = await watchedApp(app, ["config/*.json", "plugins/**/*.mjs"]);
    await byWatcher("config/tools.json", () => rmSync(join(app, "config"), { recursive: true }));
    await byWatcher("config/tools.json");
    // replaced by a rename: no event inside either directory, only the base's name in its parent,
    // which no pattern matches
    await byWatcher("config/tools.json", swapIn(app, "config"));
    await byWatcher("config/tools.json");
    // the same for a directory under a glob's base
    await byWatcher("plugins/a/one.mjs", swapIn(app, "plugins/a"));
    await byWatcher("plugins/a/one.mjs");
  }, 60_000);

  it("reports a write in an include base whose parent was removed and created again or replaced by a rename, or did not exist at the start", async () => {
    const app = makeProject(join(root, "rebuilt-parent"));
    put(app, "deep/conf/tools.json", "{}");
    const byWatcher = await watchedApp(app, ["deep/conf/*.json", "late/x/*.json"]);
    // `rm -rf deep && mkdir -p deep/conf && cp …`: the base's own watch and its name's watch in
    // `deep` both follow the removed directories; only `deep`'s name in the app raises an event
    await byWatcher("deep/conf/tools.json", () => rmSync(join(app, "deep"), { recursive: true }));
    await byWatcher("deep/conf/tools.json");
    // the parent replaced by a rename: no event in it or below, only its name in the app
    await byWatcher("deep/conf/tools.json", swapIn(app, "deep"));
    await byWatcher("deep/conf/tools.json");
    // a base whose parent did not exist at the start either: created with it (`mkdir -p`), then
    // written in again
    await byWatcher("late/x/new.json");
    await byWatcher("late/x/new.json");
  }, 60_000);

  it("reports an include file written into a directory just created, under a glob's base or as the base", async () => {
    const app = makeProject(join(root, "plugins-app"));
    put(app, "plugins/first.mjs", "export {};\n");
    const p = await captureStaticIdentity(
      specFor(app, "node", ["dist/server.js"], { include: ["plugins/**", "extras/*.mjs"] }),
      new DigestCache(null),
    );
    await watch(p);
    // each directory and its file in one go, as `mkdir -p x && cp …` does: the file is there
    // before anything could watch the directory
    mkdirSync(join(app, "plugins/sub"));
    writeFileSync(join(app, "plugins/sub/second.mjs"), "export {};\n");
    expect(await next()).toEqual(["plugins/sub/second.mjs"]);
    await settled(app);
    mkdirSync(join(app, "extras")); // a base that did not exist at the start
    writeFileSync(join(app, "extras/third.mjs"), "export {};\n");
    expect(await next()).toEqual(["extras/third.mjs"]);
  });

  it("ignores tool caches in node_modules and files no include pattern matches", async () => {
    await watch(s);
    put(dir, "node_modules/.vite/vitest/results.json", "{}");
    put(dir, "config/other.txt", "x");
    put(dir, "README.md", "not watched");
    // The watcher is alive: a real change still comes through, alone. Their events came before its
    // event (one inotify queue, read in order): one reported would be in its batch or an earlier one.
    put(dir, "package-lock.json", '{"lockfileVersion": 3, "changed": true}');
    expect(await next()).toEqual(["package-lock.json"]);
    expect(seen).toEqual([]);
  });

  it("stops reporting after close() and swallows errors from the callback", async () => {
    let calls = 0;
    const watcher = start(s, { debounceMs: 50 }, () => {
      calls++;
      throw new Error("callback failure must not escape");
    });
    await watcher.ready;
    put(dir, "dist/server.js", "// again\n");
    const deadline = Date.now() + 10_000;
    while (calls === 0 && Date.now() < deadline) await sleep(25);
    expect(calls).toBe(1);
    await stop();
    // a second watcher sees the next write: the closed one (its debounce shorter) would have
    // reported it by then, from the same event
    start(s);
    put(dir, "dist/server.js", "// after close\n");
    expect(await next()).toEqual(["dist/server.js"]);
    expect(calls).toBe(1);
  });
});

describe("artifact watcher: the file that runs, however the command line names it", () => {
  let root: string;
  const { watch, next } = watcherPerTest(100);

  beforeAll(() => {
    root = tempDir("watch-links");
  });
  afterAll(() => removeDir(root));

  it("a symlinked entry: the link, the links on the way and the real file are watched; an edit of the target is reported", async () => {
    const dir = makeProject(join(root, "file-link"));
    symlinkSync("../releases/v1", join(dir, "dist/current"));
    put(dir, "releases/v1/server.js", "// v1\nprocess.stdin.resume();\n");
    symlinkSync("dist/current/server.js", join(dir, "link.js"));
    const s = await captureStaticIdentity(specFor(dir, "node", ["link.js"]), new DigestCache(null));
    expect(s.entry!.path).toBe("link.js");
    expect(watchedPaths(s).files).toEqual(
      expect.arrayContaining([
        join(dir, "link.js"),
        join(dir, "dist/current"),
        join(dir, "releases/v1/server.js"),
      ]),
    );

    await watch(s);
    put(dir, "releases/v1/server.js", "// v1, rebuilt\nprocess.stdin.resume();\n");
    expect(await next()).toEqual(["releases/v1/server.js"]);

    // pointing a link on the way at another release is a change of the entry
    put(dir, "releases/v2/server.js", "// v2\nprocess.stdin.resume();\n");
    symlinkSync("../releases/v2", join(dir, "dist/next"));
    renameSync(join(dir, "dist/next"), join(dir, "dist/current"));
    expect(await next()).toEqual(["dist/current"]);
  });

  it("node .: the package.json whose main picks the entry is a wrapper; switching main changes the identity digest", async () => {
    const dir = makeProject(join(root, "main"));
    put(dir, "a.js", "// same code\nprocess.stdin.resume();\n");
    put(dir, "b.js", "// same code\nprocess.stdin.resume();\n");
    put(dir, "package.json", JSON.stringify({ name: "demo-server", main: "a.js" }));
    const spec = specFor(dir, "node", ["."]);
    const a = await captureStaticIdentity(spec, new DigestCache(null));
    expect(a.entry!.path).toBe("a.js");
    expect(a.wrappers.map((w) => w.path)).toEqual(["package.json"]);
    expect(watchedPaths(a).files).toContain(join(dir, "package.json"));

    await watch(a);
    put(dir, "package.json", JSON.stringify({ name: "demo-server", main: "b.js" }));
    expect(await next()).toEqual(["package.json"]);

    const b = await captureStaticIdentity(spec, new DigestCache(null));
    expect(b.entry!.path).toBe("b.js");
    expect(identityDigest(b, [])).not.toBe(identityDigest(a, []));
  });
});

// What changed after the capture read it and before the watcher was set up raised no event the
// watcher could get: its first look compares the files with what the capture saw.
describe("artifact watcher: a change between the capture and the watcher", () => {
  let root: string;
  // no `ready` awaited: the first look is what these tests are about
  const { start, next, stop } = watcherPerTest(50);
  beforeAll(() => {
    root = tempDir("window");
  });
  afterAll(() => removeDir(root));

  const captured = async (name: string): Promise<{ dir: string; s: StaticIdentity }> => {
    const dir = makeProject(join(root, name));
    put(dir, "config/tools.json", "{}");
    put(dir, "config/gone.json", "{}");
    const s = await captureStaticIdentity(
      specFor(dir, "node", ["dist/server.js"], { include: ["config/*.json"] }),
      new DigestCache(null),
    );
    return { dir, s };
  };

  it("the entry, the lockfile and the include files written, added or removed meanwhile are a change seen at once", async () => {
    const { dir, s } = await captured("changed");
    put(dir, "dist/server.js", "// rebuilt after the capture\nprocess.stdin.resume();\n");
    put(dir, "package-lock.json", '{"lockfileVersion": 3, "installed": true}');
    put(dir, "config/tools.json", '{"tools": 2}');
    put(dir, "config/added.json", "{}");
    rmSync(join(dir, "config/gone.json"));
    start(s);
    expect(await next()).toEqual([
      "config/added.json",
      "config/gone.json",
      "config/tools.json",
      "dist/server.js",
      "package-lock.json",
    ]);
  });

  it("nothing changed meanwhile: nothing to report; only the identity's first watcher looks", async () => {
    const { dir, s } = await captured("unchanged");
    start(s);
    // a change made once it watches is still seen, and alone in its batch
    put(dir, "config/tools.json", '{"tools": 3}');
    expect(await next()).toEqual(["config/tools.json"]);
    await stop();
    // a second watcher of the same identity (not the supervisor's way) compares nothing with it
    start(s);
    put(dir, "dist/server.js", "// rebuilt\nprocess.stdin.resume();\n");
    expect(await next()).toEqual(["dist/server.js"]);
  });

  // The same stretch in a linked workspace package (the developer's own code a `tsc --watch` rebuilds
  // while the gateway starts): the capture kept what it saw of every file, link and directory of the
  // package; the first watcher compares. (node_modules is not compared: docs/identity.md, Limits.)

  /** makeProject with a workspace package, packages/core, linked as node_modules/acme-core. */
  const capturedWithPackage = async (name: string): Promise<{ dir: string; s: StaticIdentity }> => {
    const dir = makeProject(join(root, name));
    put(dir, "packages/core/package.json", JSON.stringify({ name: "@acme/core", main: "dist/index.js" }));
    put(dir, "packages/core/dist/index.js", "export const revision = 'A';\n");
    put(dir, "packages/core/dist/gone.js", "export {};\n");
    symlinkSync("../packages/core", join(dir, "node_modules/acme-core"));
    const s = await captureStaticIdentity(specFor(dir, "node", ["dist/server.js"]), new DigestCache(null));
    return { dir, s };
  };

  it("its files rewritten, added, removed or replaced by a rename, at any depth, are a change seen at once", async () => {
    const { dir, s } = await capturedWithPackage("package-changed");
    put(dir, "packages/core/dist/index.js", "export const revision = 'B';\n");
    put(dir, "packages/core/dist/added.js", "export {};\n");
    rmSync(join(dir, "packages/core/dist/gone.js"));
    put(dir, "packages/core/dist/deep/er/util.js", "export const answer = 42;\n");
    put(dir, "packages/core/package.tmp", JSON.stringify({ name: "@acme/core", main: "dist/added.js" }));
    renameSync(join(dir, "packages/core/package.tmp"), join(dir, "packages/core/package.json"));
    start(s);
    expect(await next()).toEqual([
      "packages/core/dist/added.js",
      "packages/core/dist/deep",
      "packages/core/dist/gone.js",
      "packages/core/dist/index.js",
      "packages/core/package.json",
    ]);
  });

  it("what the walk leaves out (a tool cache created meanwhile) is no change", async () => {
    const { dir, s } = await capturedWithPackage("package-unchanged");
    put(dir, "packages/core/coverage/lcov.info", "");
    put(dir, "packages/core/.turbo/cache.json", "{}");
    start(s);
    // a change made once it watches is still seen, and alone in its batch
    put(dir, "packages/core/dist/index.js", "export const revision = 'C';\n");
    expect(await next()).toEqual(["packages/core/dist/index.js"]);
  });
});
