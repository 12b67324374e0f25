// Every place that reads the user's home takes one rule (homeDirectory, src/util/xdg.ts): HOME when
// it is an absolute path, else the user's entry in the password database. The state directory
// took it already (home-not-absolute.test.ts); the host files wrap, doctor and drill look for, and
// `~` in identity.include, still read HOME as it was: with `HOME=` or `HOME=rel` they looked in
// (or under `rel` of) the working folder, so `wrap claude-code` wrapped a `.claude.json` there
// that Claude Code never reads, and `"~/x"` watched `x` of the server's folder. Decoys sit where
// the relative HOME would lead. The real CLI, run as `nobody` (home /nonexistent) so that no real
// home is read: root only.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { NOBODY, ROOT_ON_LINUX, unprivilegedUser } from "../helpers/otherUser.js";
import { NODE } from "../helpers/paths.js";

const PASSWD_HOME = "/nonexistent";
const GIVEN = ["", "rel"];

/** A working folder with a decoy `.claude.json` (and `x`) where each relative HOME would lead. */
function folderWithDecoys(): {
  cwd: string;
  env: Record<string, string>;
  spawn: { uid?: number; gid?: number };
} | null {
  const cwd = tempDir("portcullis-home-lookups-");
  for (const dir of [cwd, join(cwd, "rel")]) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, ".claude.json"),
      JSON.stringify({ mcpServers: { decoy: { command: "node", args: ["d.js"] } } }),
    );
    mkdirSync(join(dir, "x"));
  }
  const as = unprivilegedUser([cwd]);
  if (as === null) return null; // the checkout is not readable by nobody
  expect(as.spawn.uid).toBe(NOBODY);
  // no variable of this process's own leads the host files elsewhere
  const env = { PORTCULLIS_HOME: join(cwd, "state"), XDG_CONFIG_HOME: "", CODEX_HOME: "", APPDATA: "" };
  return { cwd, env, spawn: as.spawn };
}

describe.skipIf(!ROOT_ON_LINUX)(
  "a HOME that is not an absolute path, where the user's home is looked up",
  () => {
    it("wrap, doctor and drill look for the host files in the user's own home, and wrap says where it looked", async () => {
      const f = folderWithDecoys();
      if (f === null) return;
      for (const home of GIVEN) {
        const options = { cwd: f.cwd, env: { ...f.env, HOME: home }, noTerminal: true, ...f.spawn };
        const why = `HOME=${JSON.stringify(home)}`;
        const wrap = await runCli(["wrap", "claude-code", "--dry-run"], options);
        expect(wrap.code, why).toBe(2);
        expect(wrap.stderr, why).toContain(
          `looked in ${join(f.cwd, ".mcp.json")}, ${PASSWD_HOME}/.claude.json)`,
        );
        expect(wrap.stdout, why).not.toContain("decoy");
        const doctor = await runCli(["doctor", "--json"], options);
        const report = JSON.parse(doctor.stdout) as { hosts: { file: string }[] };
        expect(report.hosts, why).toEqual([]);
        const said = await runCli(["doctor"], options);
        expect(said.stdout, why).toContain(
          `host files       none found (looked in ${join(f.cwd, ".mcp.json")}, ${PASSWD_HOME}/.claude.json, `,
        );
        expect(said.stdout, why).toContain(`${PASSWD_HOME}/.codex/config.toml)`);
        const drill = await runCli(["drill", "decoy"], options);
        expect(drill.code, why).toBe(2);
        expect(drill.stderr, why).toContain("no server by that label");
      }
    });

    it("identity.include \"~/x\" is x of the user's own home, not of the server's folder", async () => {
      const f = folderWithDecoys();
      if (f === null) return;
      const config = join(f.cwd, "portcullis.json");
      writeFileSync(
        config,
        JSON.stringify({
          servers: { s: { command: NODE, args: ["-e", ""], identity: { include: ["~/x"] } } },
        }),
      );
      for (const home of GIVEN) {
        const run = await runCli(["run", "s"], {
          cwd: f.cwd,
          env: { ...f.env, HOME: home },
          noTerminal: true,
          ...f.spawn,
        });
        const why = `HOME=${JSON.stringify(home)}`;
        expect(run.code, why).toBe(2);
        expect(run.stderr, why).toContain(
          `identity.include of "s" in ${config}: "~/x" can never match: ${PASSWD_HOME}/x does not exist`,
        );
      }
    });
  },
);
