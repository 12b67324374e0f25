// A --rebuild that failed without a word on stderr (`false`) ended the drill's step 4 on a bare
// colon ("--rebuild "false" exited 1: "), and one ended by a signal said "exited null". Each is
// now said as it ended, and the step still fails (exit 1). The real CLI, with a real server.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { makeProject, type Project } from "../helpers/project.js";
import { passphraseEnv } from "../helpers/state.js";

const projects: Project[] = [];
afterEach(() => {
  for (const p of projects.splice(0)) p.cleanup();
});

describe("drill --rebuild that fails", () => {
  it("says how the build ended, and what it wrote on stderr only when it wrote something", async () => {
    const p = makeProject("A");
    projects.push(p);
    writeFileSync(
      join(p.dir, "portcullis.json"),
      JSON.stringify({ servers: { inventory: { command: NODE, args: [p.entry], env: p.env } } }),
    );
    const cases: [string, string][] = [
      ["false", '--rebuild "false" exited 1 (and wrote nothing on stderr)'],
      ["kill -TERM $$", '--rebuild "kill -TERM $$" was ended by SIGTERM (and wrote nothing on stderr)'],
      [
        "echo tsc: 2 errors >&2; exit 3",
        '--rebuild "echo tsc: 2 errors >&2; exit 3" exited 3: tsc: 2 errors',
      ],
    ];
    for (const [rebuild, said] of cases) {
      const r = await runCli(["drill", "inventory", "--rebuild", rebuild], {
        cwd: p.dir,
        env: { ...passphraseEnv(), HOME: p.dir },
        timeoutMs: 60_000,
      });
      expect(r.code, r.stdout + r.stderr).toBe(1);
      const step = r.stdout.split("\n").find((l) => l.startsWith("✗ 4. "));
      expect(step, r.stdout).toBe(`✗ 4. rebuild and see a new execution epoch: ${said}`);
    }
  });
});
