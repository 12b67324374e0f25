// `portcullis --help --json` was refused as a command word that "does not read as" one, though
// --json plainly reads as an option. An option given to --help (or help, -h) where the command
// goes is now named as the option it is, said to be none of portcullis's own, and sent after a
// command; a dashed word that does not read as an option (a secret pasted there) is still not
// shown. The real CLI.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";

describe("an option given to --help where the command goes", () => {
  it.each(["--help", "help", "-h"])(
    "%s --json: names --json and where a command's options go",
    async (asked) => {
      const r = await runCli([asked, "--json"]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(
        `portcullis ${asked}: --json is not one of portcullis's own options (--help, --version); a command's options go after the command (portcullis COMMAND --json …), and 'portcullis help COMMAND' says which it takes.\n`,
      );
    },
  );

  it("--version is said to be given alone; a typo of it is named; a word that reads as no option is not shown", async () => {
    const version = await runCli(["--help", "--version"]);
    expect(version.code).toBe(2);
    expect(version.stderr).toBe("portcullis --help: --version is given alone (portcullis --version).\n");
    const typo = await runCli(["--help", "--verison"]);
    expect(typo.stderr).toBe("portcullis --help: unknown option --verison (did you mean --version?).\n");
    const pasted = await runCli(["--help", "-sk_live_0123456789abcdef"]);
    expect(pasted.code).toBe(2);
    expect(pasted.stderr).toContain("(not shown: it does not read as an option");
    expect(pasted.stderr).not.toContain("sk_live");
  });
});
