// A drill without --tool skips the steps that call a tool (3, 5 and 6): it proves a new execution
// epoch, not that an approval given before it is refused, which is what the drill is for. Its last
// line, the one a human reads, says so and what to give; with --tool it is the plain line.
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

describe("drill without --tool", () => {
  it("passes, and its last line names the skipped steps and the --tool that would prove the refusal", async () => {
    const p = makeProject("A");
    projects.push(p);
    writeFileSync(
      join(p.dir, "portcullis.json"),
      JSON.stringify({ servers: { inventory: { command: NODE, args: [p.entry], env: p.env } } }),
    );
    const r = await runCli(["drill", "inventory"], {
      cwd: p.dir,
      env: { ...passphraseEnv(), HOME: p.dir },
      timeoutMs: 60_000,
    });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    for (const n of [3, 5, 6]) expect(r.stdout).toMatch(new RegExp(`^- ${n}\\. .*: skipped \\(`, "m"));
    expect(r.stdout.trimEnd().split("\n").at(-1)).toBe(
      "drill: every step run passed; steps 3, 5 and 6 skipped, so the drill proved a new execution epoch but not that an approval given before it is refused: give --tool NAME (a tool that asks for approval) to prove that",
    );
  });
});
