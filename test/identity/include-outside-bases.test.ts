// An include pattern's match outside every directory the pattern names. Beside a negation that
// opens with `..` (`!../old/**`) the glob library walks from above the working directory, and a
// wildcard that reads `..` as a name (`.?/**`, `?./**`, `[.][.]/**`, `@(*)/**`, `@()*/**`)
// matched files up there: they were digested into the identity, but not watched (the watcher
// watches the pattern's bases) and never judged for their reach. Now such a file is never
// digested, and the launch is refused in a sentence naming where the pattern was given, the
// pattern and the file. A pattern opening with its own `..` (`../a/**`) still reaches there.
// Real files, the real glob library, and the real CLI in front of a real MCP server.
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { globSync as GlobSync } from "tinyglobby";
import { afterEach, describe, expect, it } from "vitest";
import { checkIncludes } from "../../src/identity/include.js";
import { matchIncludes } from "../../src/identity/includeMatch.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { hostEnv } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";

const globSync = (createRequire(import.meta.url)("tinyglobby") as { globSync: typeof GlobSync }).globSync;

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.splice(0).reverse()) c();
});

/** A fresh root holding the real fixture server in root/inventory and a file root/a/x.js outside it. */
function layout(): { root: string; dir: string; command: string[]; outside: string } {
  const root = tempDir("portcullis-include-outside-");
  const project = makeProject("A", { parent: root });
  cleanup.push(() => removeDir(root));
  mkdirSync(join(root, "a"));
  const outside = join(root, "a", "x.js");
  writeFileSync(outside, "export default 'outside';\n");
  mkdirSync(join(project.dir, "rel"));
  writeFileSync(join(project.dir, "rel", "r.js"), "");
  return { root, dir: project.dir, command: project.command, outside };
}

/** `portcullis run ARGS` in `cwd`, its input held open as a host holds it, until it exits. */
function runHeldOpen(args: string[], cwd: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(NODE, [CLI, "run", ...args], {
    cwd,
    env: hostEnv({ PORTCULLIS_HOME: newStateDir() }),
    stdio: ["pipe", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  child.stdin.on("error", () => {});
  return new Promise<{ code: number | null; stderr: string }>((resolve) => {
    child.on("close", (code) => resolve({ code, stderr }));
  }).finally(() => child.stdin.destroy());
}

function refusal(where: string, pattern: string, outside: string, base: string): string {
  return `portcullis run: ${where}: ${JSON.stringify(pattern)} matches ../a/x.js (${outside}), outside every directory it names (${base}): the glob library read a ".." path segment there as a name, as a wildcard does beside a negation opening with ".." (such as !../old/**), which moves its walk above the working directory; such a file would be digested but neither watched nor judged for its reach; give each directory outside the working directory as a pattern of its own, opening with its .. (such as ../shared/**).\n`;
}

const WILDCARDS = [".?/**", "?./**", "[.][.]/**", "@(*)/**", "@()*/**"];

describe("a wildcard reading .. beside a negation opening with ..", () => {
  it("what the glob library matches outside the working directory is never digested, and is named as outside its pattern's bases", () => {
    const l = layout();
    const opts = { cwd: l.dir, dot: true, onlyFiles: true };
    for (const p of WILDCARDS) {
      expect(globSync([p], opts), p).not.toContain("../a/x.js");
      expect(globSync([p, "!../old/**"], opts), p).toContain("../a/x.js");
      const patterns = checkIncludes([p, "!../old/**"], l.dir, "run: --watch");
      const m = matchIncludes(l.dir, patterns, globSync);
      expect(
        m.files.filter((f) => f.rel.startsWith("../")),
        p,
      ).toEqual([]);
      expect(m.outside[0], p).toMatchObject({ pattern: p, rel: "../a/x.js", abs: l.outside, bases: [l.dir] });
    }
  });

  it("a pattern that names the directory outside still matches there; a file another pattern names is judged there", () => {
    const l = layout();
    const own = matchIncludes(l.dir, ["../a/**", "rel/**", "!../old/**"], globSync);
    expect(own.files.map((f) => f.rel)).toEqual(["../a/x.js", "rel/r.js"]);
    expect(own.outside).toEqual([]);
  });

  it("refuses the launch, exit 2, naming the config file, the label, the pattern and the file", async () => {
    const l = layout();
    const file = join(l.dir, "portcullis.json");
    const include = [".?/**", "!../old/**"];
    const server = { command: l.command[0], args: l.command.slice(1), identity: { include } };
    writeFileSync(file, JSON.stringify({ servers: { inventory: server } }));
    const r = await runHeldOpen(["inventory"], l.dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(refusal(`identity.include of "inventory" in ${file}`, ".?/**", l.outside, l.dir));
  }, 60_000);

  it("refuses the launch naming --watch", async () => {
    const l = layout();
    const r = await runHeldOpen(
      ["--label", "x", "--watch", "[.][.]/**", "--watch", "!../old/**", "--", ...l.command],
      l.dir,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(refusal("run: --watch", "[.][.]/**", l.outside, l.dir));
  }, 60_000);
});
