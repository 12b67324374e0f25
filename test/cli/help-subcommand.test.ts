// A new user asking for a subcommand's help:
// - `portcullis help vault set` (as `git help`, and this CLI's own `help COMMAND`, read it) was
//   refused "give one command", while `portcullis vault set --help` answered;
// - `catalog lsit --help` and `passkey lsit --help` printed the group's help, exit 0, as if the
//   word were a subcommand, where `audit lsit --help` and `vault lsit --help` refused it.
// The real CLI, without a state directory (help needs none).
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";

const GROUPS: [group: string, sub: string, subcommands: string][] = [
  ["audit", "verify", "verify, export, checkpoint, sessions, activity or show"],
  ["catalog", "diff", "show, diff or list"],
  ["passkey", "rm", "list, add or rm"],
  ["vault", "set", "set, list or rm"],
];

describe("a subcommand's help", () => {
  it("help GROUP SUBCOMMAND (and --help, -h) prints what GROUP SUBCOMMAND --help prints", async () => {
    for (const [group, sub] of GROUPS) {
      const own = await runCli([group, sub, "--help"]);
      expect(own.code).toBe(0);
      for (const asked of ["help", "--help", "-h"]) {
        const r = await runCli([asked, group, sub]);
        expect(r.code, `${asked} ${group} ${sub}`).toBe(0);
        expect(r.stderr).toBe("");
        expect(r.stdout).toBe(own.stdout);
      }
    }
  });

  it("a word that is none of the group's subcommands is refused, with --help as with help", async () => {
    for (const [group, , subcommands] of GROUPS) {
      const refusal = `portcullis ${group}: unknown subcommand "lsit"${group === "catalog" || group === "passkey" || group === "vault" ? " (did you mean list?)" : ""}; use ${subcommands} ('portcullis ${group} --help' says what each does).\n`;
      for (const words of [
        [group, "lsit", "--help"],
        ["help", group, "lsit"],
      ]) {
        const r = await runCli(words);
        expect(r.stderr, words.join(" ")).toBe(refusal);
        expect(r.stdout).toBe("");
        expect(r.code).toBe(2);
      }
    }
  });

  it("more words than a command and its subcommand are still refused", async () => {
    const three = await runCli(["help", "vault", "set", "x"]);
    expect(three.stderr).toBe("portcullis help: give one command (portcullis help COMMAND [SUBCOMMAND]).\n");
    expect(three.code).toBe(2);
    const two = await runCli(["help", "status", "extra"]);
    expect(two.stderr).toBe("portcullis help: give one command (portcullis help COMMAND).\n");
    expect(two.code).toBe(2);
  });
});
