// An identity.include pattern (or --watch) that opens with a group of alternatives one of which is
// an absolute path (`{/usr,/opt}/**`) is refused when run starts, exit 2, naming the file, the
// label's key (or the flag), the pattern and the absolute path it can never match. The glob library
// reads a pattern not starting with `/` from the working directory, where no absolute path
// matches: accepted before, such a pattern digested and watched nothing of those directories,
// silently (and `{/,/tmp}**` went past the check of a walk of the whole file system). The real CLI
// and the real glob library; the refusal comes before the keyring is looked for, so no state
// directory is set up.

import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { globSync as GlobSync } from "tinyglobby";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) removeDir(d);
});

/** A project with its own plugins/a.js, and a plugin directory outside it holding x.js. */
function project(): { dir: string; outside: string; home: string; state: string; file: string } {
  const dir = tempDir("portcullis-include-group-");
  dirs.push(dir);
  const outside = join(dir, "opt-plugins");
  mkdirSync(join(dir, "project", "plugins"), { recursive: true });
  mkdirSync(outside);
  mkdirSync(join(dir, "home"));
  writeFileSync(join(dir, "project", "plugins", "a.js"), "");
  writeFileSync(join(outside, "x.js"), "");
  return {
    dir: join(dir, "project"),
    outside,
    home: join(dir, "home"),
    state: join(dir, "state"),
    file: join(dir, "project", "portcullis.json"),
  };
}

function refusal(pattern: string, absolute: string): string {
  return `${JSON.stringify(pattern)} can never match ${absolute}: it opens with a group of alternatives, so the glob library reads it relative to the working directory, where an absolute path never matches; give each absolute path as a pattern of its own, without the group.\n`;
}

describe("an include pattern whose opening group holds an absolute path", () => {
  it("is what the glob library never matches: it reads the pattern from the working directory", () => {
    const p = project();
    const globSync = (createRequire(import.meta.url)("tinyglobby") as { globSync: typeof GlobSync }).globSync;
    const opts = { cwd: p.dir, dot: true, onlyFiles: true, followSymbolicLinks: true };
    expect(globSync([`${p.outside}/**`], opts)).toEqual(["../opt-plugins/x.js"]);
    expect(globSync([`{${p.outside},/nowhere}/**`], opts)).toEqual([]);
    expect(globSync([`{plugins,${p.outside}}/**`], opts)).toEqual(["plugins/a.js"]);
  });

  it("is refused naming the file, the label, the pattern and the absolute path", async () => {
    const p = project();
    const cases: [string, string][] = [
      ["{/usr,/opt}/**", "/usr/**"],
      ["{/,/tmp}**", "/**"],
      ["{,/}usr/**", "/usr/**"],
      [`{plugins,${p.outside}}/*.js`, `${p.outside}/*.js`],
      [`{{x,${p.outside}},y}/**`, `${p.outside}/**`],
      [`@(${p.outside}|plugins)/**`, `${p.outside}/**`],
      [`!{${p.outside},/nowhere}/**`, `${p.outside}/**`],
    ];
    for (const [pattern, absolute] of cases) {
      const include = pattern.startsWith("!") ? ["plugins/**", pattern] : [pattern];
      writeFileSync(p.file, JSON.stringify({ servers: { s: { command: "node", identity: { include } } } }));
      const r = await runCli(["run", "s"], { cwd: p.dir, stateDir: p.state, env: { HOME: p.home } });
      expect(r.code, pattern).toBe(2);
      expect(r.stderr, pattern).toBe(
        `portcullis run: identity.include of "s" in ${p.file}: ${refusal(pattern, absolute)}`,
      );
    }
  });

  it("given with --watch is refused naming the flag", async () => {
    const p = project();
    const pattern = `{${p.outside},/nowhere}/**`;
    const r = await runCli(["run", "--label", "x", "--watch", pattern, "--", "node", "server.js"], {
      cwd: p.dir,
      stateDir: p.state,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`portcullis run: --watch: ${refusal(pattern, `${p.outside}/**`)}`);
  });

  it("nesting thousands of groups is refused in a sentence, not by a stack overflow (exit 70)", async () => {
    const p = project();
    for (const pattern of [
      `${"@(".repeat(5000)}a|b${")".repeat(5000)}/**`,
      `${"{".repeat(33)}a,b${"}".repeat(33)}`,
    ]) {
      const r = await runCli(["run", "--label", "x", "--watch", pattern, "--", "node", "server.js"], {
        cwd: p.dir,
        stateDir: p.state,
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(
        `portcullis run: --watch: ${JSON.stringify(pattern)} nests groups more than 32 deep; give a simpler pattern.\n`,
      );
    }
  });

  it("with .. in a brace group is what the glob library reads as a range of single characters", () => {
    const p = project();
    const globSync = (createRequire(import.meta.url)("tinyglobby") as { globSync: typeof GlobSync }).globSync;
    const opts = { cwd: p.dir, dot: true, onlyFiles: true, followSymbolicLinks: true };
    expect(globSync(["../opt-plugins/**"], opts)).toEqual(["../opt-plugins/x.js"]);
    expect(globSync(["{plugins,../opt-plugins}/**"], opts)).toEqual([]);
    expect(globSync(["{plugins,lib}/**"], opts)).toEqual(["plugins/a.js"]);
  });

  it("with .. in a brace group is refused naming the group", async () => {
    const p = project();
    for (const [pattern, group] of [
      ["{plugins,../opt-plugins}/**", "{plugins,../opt-plugins}"],
      ["plugins/{../lib,x}/*.js", "{../lib,x}"],
      ["{a,{b,../c}}/q", "{b,../c}"],
    ]) {
      writeFileSync(
        p.file,
        JSON.stringify({ servers: { s: { command: "node", identity: { include: [pattern] } } } }),
      );
      const r = await runCli(["run", "s"], { cwd: p.dir, stateDir: p.state, env: { HOME: p.home } });
      expect(r.code, pattern).toBe(2);
      expect(r.stderr, pattern).toBe(
        `portcullis run: identity.include of "s" in ${p.file}: ${JSON.stringify(pattern)} does not match what it lists: the glob library reads the group ${group}, which holds "..", as a range such as {1..3}, a class of single characters; give each alternative as a pattern of its own.\n`,
      );
    }
  });

  it("a group of relative paths, or one after the first /, is accepted", async () => {
    const p = project();
    for (const pattern of [
      "{plugins,lib}/**",
      `${p.outside}/{x,y}.js`,
      "~/{a,b}/*.js",
      "plugins/{a,f{1..3}}.js",
      "../opt-plugins/**",
    ]) {
      writeFileSync(
        p.file,
        JSON.stringify({ servers: { s: { command: "node", identity: { include: [pattern] } } } }),
      );
      const r = await runCli(["run", "s"], { cwd: p.dir, stateDir: p.state, env: { HOME: p.home } });
      // the next refusal: no keyring in a state directory never set up
      expect(r.code, pattern).toBe(2);
      expect(r.stderr, pattern).toContain("no keyring");
      expect(r.stderr, pattern).not.toContain("identity.include");
    }
  });
});
