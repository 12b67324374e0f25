// A command that needs the passphrase, run where there is no terminal to ask on (an agent's
// subprocess, a CI job) and no passphrase file: one sentence saying how to give it and exit 2,
// never an "internal error" with a stack trace. The drill is such a command (it approves its
// own test call); a new session has no controlling terminal.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest, pending } from "../helpers/approvals.js";
import { tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

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

// `approve ID` with no terminal to show what it covers (a script; the passphrase from
// PORTCULLIS_PASSPHRASE_FILE) picks no reach by itself, as `approve --next` does not: a
// session-wide grant nobody asked for is the costlier mistake. Refused before the passphrase,
// nothing decided; with --for it approves.
describe("approve ID without a terminal", () => {
  for (const mode of ["session", "per-call"] as const)
    it(`needs --for (a tool in ${mode} mode), says which, and decides nothing without it`, async () => {
      const stateDir = newStateDir();
      const gw = await startGateway({
        args: ["--label", "asks", "--approval", mode, "--", ...fixtureCommand("echo")],
        stateDir,
      });
      cleanup.push(() => gw.close());
      const call = gw.client.callTool({ name: "echo", arguments: { message: "hi" } });
      const req = await nextStoredRequest(stateDir);
      const bare = await runCli(["approve", req.request, "--state-dir", stateDir], {
        env: passphraseEnv(),
        noTerminal: true,
      });
      expect(bare.code).toBe(2);
      expect(bare.stderr).toBe(
        mode === "session"
          ? "portcullis approve: there is no terminal to confirm on; give --for session (this agent run's calls of the tool, in the current execution epoch) or --for call (this one call); nothing was approved.\n"
          : "portcullis approve: there is no terminal to confirm on; give --for call (tool echo of asks needs a human decision for every call); nothing was approved.\n",
      );
      // said before the review and the passphrase: nothing shown as if it were going ahead
      expect(bare.stdout).not.toMatch(/Approving/);
      expect((await pending(stateDir)).map((p) => p.request)).toEqual([req.request]);

      const forWhat = mode === "session" ? "session" : "call";
      const given = await runCli(["approve", req.request, "--for", forWhat, "--state-dir", stateDir], {
        env: passphraseEnv(),
        noTerminal: true,
      });
      expect(given.stderr).toBe("");
      expect(given.code).toBe(0);
      expect(given.stdout).toMatch(new RegExp(`approved ${req.request}: grant \\S+ \\(${mode}`));
      expect((await call).isError).toBeFalsy();
    }, 60_000);
});
