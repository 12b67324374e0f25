// A command that needs the passphrase, run where there is no terminal to ask on (an agent's
// subprocess, a CI job) and no passphrase file: one sentence saying how to give it and exit 2,
// never an "internal error" with a stack trace. The drill is such a command (it approves its
// own test call); a new session has no controlling terminal.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

describe("no terminal to ask the passphrase on", () => {
  it("the drill of a known server says how to give the passphrase, exit 2", async () => {
    const home = tempDir("portcullis-home-");
    const project = join(home, "project");
    mkdirSync(project);
    const [command, ...args] = fixtureCommand("echo");
    writeFileSync(join(project, ".mcp.json"), JSON.stringify({ mcpServers: { echo: { command, args } } }));
    const env = { HOME: home, PORTCULLIS_HOME: newStateDir() };
    const { code, stderr } = await runCli(["drill", "echo", "--tool", "echo"], {
      env,
      cwd: project,
      noTerminal: true,
    });
    expect(stderr).not.toMatch(/internal error|at .*\.js:\d+/);
    expect(stderr).toMatch(/no terminal to read the passphrase from; set PORTCULLIS_PASSPHRASE_FILE/);
    expect(code).toBe(2);
  }, 60_000);
});
