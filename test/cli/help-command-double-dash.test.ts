// `portcullis help COMMAND OPTIONS` is `portcullis COMMAND OPTIONS --help` (README), but a '--'
// among the options made the `--help` put after them an operand: `help run --` was
// `run -- --help`, which went on to start a gateway around a command named "--help", `help
// approve --` tried to approve a request named so, `help vault set --` to store a secret named so.
// Whatever follows the command, `help` prints a help or refuses; it never runs the command. The real CLI.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

describe("help COMMAND with '--' after it", () => {
  it.each([["approve"], ["run"], ["drill"], ["vault", "set"]])(
    "help %s -- runs nothing",
    async (...command) => {
      const stateDir = newStateDir();
      const r = await runCli(["help", ...command, "--"], { stateDir, input: "" });
      // refused as before c8e02940: a word that is no option of the command's was given
      expect(r.stderr).toBe(
        `portcullis help: give one command (portcullis help COMMAND${command.length > 1 ? " [SUBCOMMAND]" : ""}).\n`,
      );
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
    },
  );

  it("an option beside it is still the command's", async () => {
    const r = await runCli(["help", "run", "--json"], { input: "" });
    expect(r.stderr).toContain("portcullis run: unknown option --json");
  });
});
