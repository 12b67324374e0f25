// An option given an empty value, as `--config "$FILE"` with FILE unset gives, is refused naming
// the option and what leaving it out does (as an empty --state-dir is): taken as absent, it read
// portcullis.json found upward instead of the file meant, verified the state directory's log
// instead of the export and said "ok", or ran the drill without the rebuild asked for. And an
// empty server command after '--' is a usage error, not an internal error with a stack (exit 70).
// The real CLI.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

/** A directory whose portcullis.json runs the echo fixture as "echo". */
function projectWithEcho(): string {
  const dir = tempDir();
  const [command, ...args] = fixtureCommand("echo");
  writeFileSync(join(dir, "portcullis.json"), JSON.stringify({ servers: { echo: { command, args } } }));
  return dir;
}

describe("an empty value", () => {
  it("after '--' (the server command) is a usage error naming it, not an internal error", async () => {
    const r = await runCli(["run", "--", ""], { stateDir: newStateDir(), input: "" });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "portcullis run: the command after '--' is empty; give the server command, e.g. -- node dist/server.js.\n",
    );
  });

  it("of run --config is refused, not taken as absent (portcullis.json found upward is not run)", async () => {
    const r = await runCli(["run", "--config", "", "echo"], {
      stateDir: newStateDir(),
      cwd: projectWithEcho(),
      input: "",
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "portcullis run: --config is empty; give the file LABEL is read from, or leave the flag out to find portcullis.json upward.\n",
    );
  });

  it("of run --listen-token-file is refused naming the flag", async () => {
    const r = await runCli(
      ["run", "--listen", "127.0.0.1:0", "--listen-token-file=", "--", ...fixtureCommand("echo")],
      { stateDir: newStateDir(), input: "" },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "portcullis run: --listen-token-file is empty; give the file whose first line is the token, or leave the flag out for the one kept in the state directory.\n",
    );
  });

  it("of drill --file, --rebuild or --tool is refused before anything runs", async () => {
    const cwd = projectWithEcho();
    for (const [flag, said] of [
      ["file", "the file LABEL is read from, or leave the flag out to look LABEL up from here"],
      ["rebuild", "the build command, or leave the flag out to restart the server process instead"],
      ["tool", "the name of a tool to call, or leave the flag out to call none"],
    ] as const) {
      // no passphrase file and no terminal: a drill that went on would stop at the passphrase
      const r = await runCli(["drill", "echo", `--${flag}`, ""], { cwd, input: "", noTerminal: true });
      expect(r.code, flag).toBe(2);
      expect(r.stderr, flag).toBe(`portcullis drill: --${flag} is empty; give ${said}.\n`);
    }
  });

  it("of audit verify --file or --checkpoint is refused: the state directory's log is not verified in the export's place", async () => {
    const stateDir = newStateDir();
    for (const [flag, said] of [
      ["file", "the export to verify, or leave the flag out to verify the state directory's log"],
      ["checkpoint", "the checkpoint file, or leave the flag out to verify without one"],
    ] as const) {
      const r = await runCli(["audit", "verify", `--${flag}=`, "--json"], { stateDir, input: "" });
      expect(r.code, flag).toBe(2);
      expect(r.stdout, flag).toBe("");
      expect(r.stderr, flag).toBe(`portcullis audit verify: --${flag} is empty; give ${said}.\n`);
    }
  });
});
