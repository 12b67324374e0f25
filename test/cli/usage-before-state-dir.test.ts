// A usage error (an unknown option, an option without its value, a missing argument) is said
// before a missing state directory is, by the commands whose state directory main.ts takes from
// --state-dir for them (vault, unlock, lock, passkey, audit) as by those that read it themselves
// (status): resolved first, `vault set X --hots h` was answered "no state directory", and fixing
// that (init) only led to the typo. A well-formed command still refuses the missing directory,
// creating nothing. The real CLI, with the default state directory (under a fresh HOME) missing.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";

const cases: [string[], string][] = [
  [
    ["vault", "set", "X", "--hots", "h"],
    "portcullis vault set: unknown option --hots (did you mean --host?).",
  ],
  [["vault", "set", "X", "--host"], "portcullis vault set: --host needs a value."],
  [["vault", "set", "--host", "h.example"], "portcullis vault set: give one secret NAME."],
  [
    ["vault", "list", "--bogus"],
    "portcullis vault list: unknown option --bogus ('portcullis vault list --help' lists the options).",
  ],
  [
    ["vault", "rm", "--bogus", "X"],
    "portcullis vault rm: unknown option --bogus ('portcullis vault rm --help' lists the options).",
  ],
  [["unlock", "--fro", "1m"], "portcullis unlock: unknown option --fro (did you mean --for?)."],
  [["unlock", "--for"], "portcullis unlock: --for needs a value."],
  [
    ["lock", "--bogus"],
    "portcullis lock: unknown option --bogus ('portcullis lock --help' lists the options).",
  ],
  [
    ["passkey", "list", "--bogus"],
    "portcullis passkey list: unknown option --bogus ('portcullis passkey list --help' lists the options).",
  ],
  [["passkey", "rm"], "portcullis passkey rm: give the passkey ID (see 'portcullis passkey list')."],
  [
    ["audit", "verify", "--bogus"],
    "portcullis audit verify: unknown option --bogus ('portcullis audit verify --help' lists the options).",
  ],
];

describe("with the default state directory missing", () => {
  it.each(cases)("`%j` is refused for its usage, not the directory", async (args, said) => {
    const home = tempDir("portcullis-home-");
    const r = await runCli(args, { env: { HOME: home } });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`${said}\n`);
    expect(existsSync(join(home, ".local"))).toBe(false);
  });

  it.each([[["vault", "set", "X", "--host", "h.example"]], [["lock"]], [["passkey", "list"]]])(
    "a well-formed `%j` still refuses the missing directory, creating nothing",
    async (args) => {
      const home = tempDir("portcullis-home-");
      const r = await runCli(args, { env: { HOME: home } });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`no state directory at ${join(home, ".local", "state", "portcullis")}`);
      expect(existsSync(join(home, ".local"))).toBe(false);
    },
  );
});
