// `help` is one of the commands the README lists (`portcullis help [COMMAND]`, "the same as
// 'portcullis COMMAND --help'"), and every command answers `--help` and `-h` with its help, exit
// 0. `help` itself did not: `portcullis help --help` and `portcullis help -h` were "unknown
// command (not shown: … may be a secret typed in the wrong place)", and `portcullis help help`
// "unknown command \"help\"", all exit 2. Real CLI processes.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";

describe("help of help", () => {
  it("`help --help`, `help -h` and `help help` print the command list, exit 0, as `portcullis --help` does", async () => {
    const top = await runCli(["--help"]);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/^portcullis — /);
    for (const args of [
      ["help", "--help"],
      ["help", "-h"],
      ["help", "help"],
    ]) {
      const r = await runCli(args);
      expect(r.stderr, args.join(" ")).toBe("");
      expect(r.code, args.join(" ")).toBe(0);
      expect(r.stdout, args.join(" ")).toBe(top.stdout);
    }
  });
});
