// An identity.include pattern (or --watch) whose walk reaches the whole file system, a directory
// at its top or the whole home directory is refused when run starts, exit 2, naming the file, the
// label's key (or the flag) and the pattern. Accepted before, `"/**"` had every capture (each
// launch, each change) walk and digest the whole file system, and the watcher watch each of its
// directories; `"/usr/**"` and `"~/**"` likewise a system tree or every cache of the home. The real
// CLI; the refusal comes before the keyring is looked for, so no state directory is set up.
import { mkdirSync, writeFileSync } from "node:fs";
import { join, sep } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) removeDir(d);
});

function project(): { dir: string; home: string; state: string } {
  const dir = tempDir("portcullis-include-wide-");
  dirs.push(dir);
  const home = join(dir, "home");
  mkdirSync(join(dir, "plugins"));
  mkdirSync(home);
  return { dir, home, state: join(dir, "state") };
}

/** `../` as many times as climbs from `dir` to the root, then `**`. */
function climbingToRoot(dir: string): string {
  return `${"../".repeat(dir.split(sep).length)}**`;
}

describe("an include pattern that walks too much", () => {
  it("is refused naming the file, the label and the pattern, and why", async () => {
    const p = project();
    const cases: [string, string][] = [
      ["/**", "walks the whole file system (from /)"],
      ["/", "walks the whole file system (from /)"],
      ["/*.js", "walks the whole file system (from /)"],
      [climbingToRoot(p.dir), "walks the whole file system (from /)"],
      ["/usr/**", "walks all of /usr (a directory at the top of the file system)"],
      ["/proc/**", "walks all of /proc (a directory at the top of the file system)"],
      ["~/**", `walks the whole home directory ${p.home}`],
    ];
    const file = join(p.dir, "portcullis.json");
    for (const [pattern, why] of cases) {
      writeFileSync(
        file,
        JSON.stringify({ servers: { s: { command: "node", identity: { include: [pattern] } } } }),
      );
      const r = await runCli(["run", "s"], { cwd: p.dir, stateDir: p.state, env: { HOME: p.home } });
      expect(r.code, pattern).toBe(2);
      expect(r.stderr, pattern).toBe(
        `portcullis run: identity.include of "s" in ${file}: ${JSON.stringify(pattern)} ${why} at every capture, and watches it; give the directory of the server's own files (such as /opt/plugins/**).\n`,
      );
    }
  });

  it("given with --watch is refused naming the flag", async () => {
    const p = project();
    const r = await runCli(["run", "--label", "x", "--watch", "/**", "--", "node", "server.js"], {
      cwd: p.dir,
      stateDir: p.state,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`portcullis run: --watch: "/**" walks the whole file system (from /)`);
  });

  it("a narrower one is accepted: the project's own, one under a top directory, the home's own folder, a plain top directory", async () => {
    const p = project();
    mkdirSync(join(p.home, ".config"));
    const file = join(p.dir, "portcullis.json");
    for (const pattern of ["plugins/**", "/usr/local/lib/**", "~/.config/**", "~/*.js", "/usr", "!/**"]) {
      writeFileSync(
        file,
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
