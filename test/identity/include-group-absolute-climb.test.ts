// Include patterns whose groups the glob library reads otherwise than their text says, refused
// when run starts, exit 2, in a sentence naming the file, the label's key (or the flag), the
// pattern and the group; accepted before:
// - a group that makes a `..` segment (`@(rel|../a)/**`, every extglob form, `@(.|x)./**`): the
//   library matches a group's alternatives only below where the walk starts, so alone it never
//   matched what it listed, and beside a pattern opening with `..` it matched files outside the
//   working directory that no check had judged;
// - `~` in a group (`{~/a,~/b}/**`): read as a folder named ~ in the working directory;
// - `\.` in a brace group (`{rel,\.\./a}`): picomatch drops that backslash, so it is a range as
//   `{rel,../a}` is; and `\{a,b}` (the folder named {a,b}) was refused as "unclosed".
// - a pattern opening with `!(` (`!(x)/**`): a negation to portcullis, a pattern of files to the
//   library, whose files were digested, yet neither watched nor judged for their reach.
// The real CLI and the real glob library; the refusal comes before the keyring is looked for.
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

const globSync = (createRequire(import.meta.url)("tinyglobby") as { globSync: typeof GlobSync }).globSync;

/** A project holding rel/r.js and the folder `{a,b}`, beside a folder a/ outside it. */
function project(): { dir: string; home: string; state: string; file: string } {
  const root = tempDir("portcullis-include-climb-");
  dirs.push(root);
  const dir = join(root, "project");
  mkdirSync(join(dir, "rel"), { recursive: true });
  mkdirSync(join(dir, "{a,b}"));
  mkdirSync(join(root, "a"));
  mkdirSync(join(root, "home"));
  writeFileSync(join(dir, "rel", "r.js"), "");
  writeFileSync(join(dir, "{a,b}", "q.js"), "");
  writeFileSync(join(root, "a", "x.js"), "");
  return { dir, home: join(root, "home"), state: join(root, "state"), file: join(dir, "portcullis.json") };
}

async function run(p: ReturnType<typeof project>, pattern: string) {
  writeFileSync(
    p.file,
    JSON.stringify({ servers: { s: { command: "node", identity: { include: [pattern] } } } }),
  );
  return runCli(["run", "s"], { cwd: p.dir, stateDir: p.state, env: { HOME: p.home } });
}

function climbs(pattern: string, group: string): string {
  return `${JSON.stringify(pattern)} can never match what its group ${group} lists with "..": the glob library matches a group's alternatives only below the directory the group is in, never climbing out of it; give each alternative that climbs as a pattern of its own, opening with its .. (such as ../shared/**).\n`;
}

describe("an include pattern whose group climbs with ..", () => {
  it("is what the glob library never matches alone, and matches outside beside a walk moved up", () => {
    const p = project();
    const opts = { cwd: p.dir, dot: true, onlyFiles: true, followSymbolicLinks: true };
    expect(globSync(["../a/**"], opts)).toEqual(["../a/x.js"]);
    expect(globSync(["@(rel|../a)/**"], opts)).toEqual(["rel/r.js"]);
    expect(globSync(["@(rel|../a)/**", "!../elsewhere/**"], opts)).toEqual(["../a/x.js", "rel/r.js"]);
    expect(globSync(["@(.|x)./a/**", "!../elsewhere/**"], opts)).toEqual(["../a/x.js"]);
  });

  it("is refused naming the file, the label, the pattern and the group, in every extglob form", async () => {
    const p = project();
    const cases: [string, string][] = [
      ["@(rel|../a)/**", "@(rel|../a)"],
      ["+(rel|../a)/**", "+(rel|../a)"],
      ["rel/*(x|..)/**", "*(x|..)"],
      ["rel/?(../a)/*.js", "?(../a)"],
      ["(rel|../a)/**", "(rel|../a)"],
      ["rel/@(x|../../a)/*.js", "@(x|../../a)"],
      ["@(.|x)./a/**", "@(.|x)"],
      ["rel/+(+(x|.))/**", "+(+(x|.))"],
      ["@(rel|{x,y}/../a)/**", "@(rel|{x,y}/../a)"],
    ];
    for (const [pattern, group] of cases) {
      const r = await run(p, pattern);
      expect(r.code, pattern).toBe(2);
      expect(r.stderr, pattern).toBe(
        `portcullis run: identity.include of "s" in ${p.file}: ${climbs(pattern, group)}`,
      );
    }
  });

  it("as a negation (!(…)) is refused too, naming the flag", async () => {
    const p = project();
    const pattern = "!(rel|../a)/**";
    const r = await runCli(
      ["run", "--label", "x", "--watch", "rel/**", "--watch", pattern, "--", "node", "s.js"],
      {
        cwd: p.dir,
        stateDir: p.state,
      },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`portcullis run: --watch: ${climbs(pattern, "(rel|../a)")}`);
  });

  it("a .. outside groups, or dots inside a name, is accepted", async () => {
    const p = project();
    for (const pattern of ["../@(a|b)/**", "@(a..b|rel)/**", "rel/*(x|.y)/*.js", "../a/**"]) {
      const r = await run(p, pattern);
      // the next refusal: no keyring in a state directory never set up
      expect(r.code, pattern).toBe(2);
      expect(r.stderr, pattern).toContain("no keyring");
      expect(r.stderr, pattern).not.toContain("identity.include");
    }
  });
});

describe("~ inside a group", () => {
  it("is refused in a sentence: it is the home directory only at the start of a pattern", async () => {
    const p = project();
    const cases: [string, string][] = [
      ["{~/a,~/b}/**", "{~/a,~/b}"],
      ["@(rel|~)/*.js", "@(rel|~)"],
    ];
    for (const [pattern, group] of cases) {
      const r = await run(p, pattern);
      expect(r.code, pattern).toBe(2);
      expect(r.stderr, pattern).toBe(
        `portcullis run: identity.include of "s" in ${p.file}: ${JSON.stringify(pattern)} has ~ inside the group ${group}: ~ is the home directory only at the start of a pattern, and in a group the glob library reads it as a folder named ~ in the working directory; give each home path as a pattern of its own (such as ~/a/**), or the group after ~/ (such as ~/{a,b}/**).\n`,
      );
    }
  });

  it("the group after ~/ is accepted, each alternative judged for its reach on its own", async () => {
    const p = project();
    const r = await run(p, "~/{a,b}/**");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no keyring");
    expect(r.stderr).not.toContain("identity.include");
    const wide = await run(p, "~/{.,a}/**");
    expect(wide.stderr).toBe(
      `portcullis run: identity.include of "s" in ${p.file}: "~/{.,a}/**" walks the whole home directory ${p.home} at every capture, and watches it; give the directory of the server's own files (such as /opt/plugins/**).\n`,
    );
  });
});

describe("escapes, read as the glob library reads them", () => {
  it("\\. is a dot to picomatch, and \\{a,b} the folder {a,b}", () => {
    const p = project();
    const opts = { cwd: p.dir, dot: true, onlyFiles: true, followSymbolicLinks: true };
    expect(globSync(["{rel,\\.\\./a}/**"], opts)).toEqual([]);
    expect(globSync(["{rel,../a}/**"], opts)).toEqual([]);
    expect(globSync(["\\{a,b}/**"], opts)).toEqual(["{a,b}/q.js"]);
  });

  it("a brace group holding \\.\\. is refused as a range, one holding \\/ as an absolute path", async () => {
    const p = project();
    // picomatch gives the dots of a group inside braces to the braces: a range too
    const nested = await run(p, "{rel,@(x|../a)}/**");
    expect(nested.stderr).toContain('reads the group {rel,@(x|../a)}, which holds "..", as a range');
    const range = await run(p, "{rel,\\.\\./a}/**");
    expect(range.code).toBe(2);
    expect(range.stderr).toBe(
      `portcullis run: identity.include of "s" in ${p.file}: "{rel,\\\\.\\\\./a}/**" does not match what it lists: the glob library reads the group {rel,\\.\\./a}, which holds "..", as a range such as {1..3}, a class of single characters; give each alternative as a pattern of its own.\n`,
    );
    const absolute = await run(p, "{\\/usr,rel}/**");
    expect(absolute.code).toBe(2);
    expect(absolute.stderr).toContain(`"{\\\\/usr,rel}/**" can never match /usr/**: it opens with a group`);
    // a group that can be nothing still leaves the `/` after it at the start
    const optional = await run(p, "?(rel)/**");
    expect(optional.stderr).toContain(`"?(rel)/**" can never match /**: it opens with a group`);
  });

  it("an escaped { before a closing } names the folder {a,b}: accepted, not refused as unclosed", async () => {
    const p = project();
    for (const pattern of ["\\{a,b}/**", "{rel,\\}}/**"]) {
      const r = await run(p, pattern);
      expect(r.code, pattern).toBe(2);
      expect(r.stderr, pattern).toContain("no keyring");
      expect(r.stderr, pattern).not.toContain("identity.include");
    }
  });
});

describe("a pattern opening with !(", () => {
  it("is a pattern of files to the glob library: refused naming the flag or the file, the pattern and its group; after ./, or negated with a second !, accepted", async () => {
    const p = project();
    mkdirSync(join(p.dir, "x"));
    writeFileSync(join(p.dir, "x", "a.js"), "");
    const opts = { cwd: p.dir, dot: true, onlyFiles: true };
    // beside rel/** it adds the files of every folder but x: nothing is left out
    expect(globSync(["rel/**", "!(x)/**"], opts)).toEqual(["rel/r.js", "{a,b}/q.js"]);
    // written with a second ! (or as !./!(x)/**) it leaves them out
    expect(globSync(["**/*.js", "!!(x)/**"], opts)).toEqual(["x/a.js"]);
    expect(globSync(["**/*.js", "!./!(x)/**"], opts)).toEqual(["x/a.js"]);

    const sentence = (pattern: string, group: string) =>
      `${JSON.stringify(pattern)} opens with the group ${group}, which the glob library reads as a pattern of files to digest (any name but what the group lists), not as a negation; to digest them write it after ./ (such as ./${pattern}), and to leave them out give it a second ! (such as !${pattern}).\n`;
    const r = await runCli(
      ["run", "--label", "x", "--watch", "rel/**", "--watch", "!(x)/**", "--", "node", "s.js"],
      {
        cwd: p.dir,
        stateDir: p.state,
      },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`portcullis run: --watch: ${sentence("!(x)/**", "!(x)")}`);
    const c = await run(p, "!(x|y)/*.js");
    expect(c.code).toBe(2);
    expect(c.stderr).toBe(
      `portcullis run: identity.include of "s" in ${p.file}: ${sentence("!(x|y)/*.js", "!(x|y)")}`,
    );

    for (const pattern of ["./!(x)/**", "!!(x)/**", "!./!(x)/**"]) {
      const a = await run(p, pattern);
      // the next refusal: no keyring in a state directory never set up
      expect(a.code, pattern).toBe(2);
      expect(a.stderr, pattern).toContain("no keyring");
      expect(a.stderr, pattern).not.toContain("identity.include");
    }
  });
});
