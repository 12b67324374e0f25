// A word too many after a secret's NAME or a passkey's ID was answered "give one secret NAME" /
// "give the passkey ID", which reads as if none was given: the user who typed two is told that
// two were given (never which: the second may be the value, typed where it never belongs). And
// `deny --reason ""` (a `--reason "$WHY"` with WHY unset) was taken: a denial recorded and told
// to the agent with a reason that says nothing. The real CLI.
import { afterEach, describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) removeDir(d);
});

const VALUE = "sk-live-words-too-many-7f3a";

describe("a word too many, and an empty reason", () => {
  it("vault set, vault rm and passkey rm say two words were given, showing neither", async () => {
    const stateDir = newStateDir();
    dirs.push(stateDir);
    const cases: [string[], string][] = [
      [
        ["vault", "set", "TOKEN", VALUE, "--deliver", "env"],
        "portcullis vault set: takes one secret NAME (2 words were given, not shown); the value is never an argument: it is typed when asked, or read with --from-stdin.\n",
      ],
      [
        ["vault", "rm", "TOKEN", VALUE],
        "portcullis vault rm: takes one secret NAME (2 words were given, not shown).\n",
      ],
      [
        ["passkey", "rm", "ID", VALUE],
        "portcullis passkey rm: takes one passkey ID (2 words were given, not shown).\n",
      ],
    ];
    for (const [args, said] of cases) {
      const r = await runCli(args, { stateDir, env: passphraseEnv(), noTerminal: true });
      expect(r.stderr, args.join(" ")).toBe(said);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout + r.stderr).not.toContain(VALUE);
    }
  });

  it("deny --reason with an empty value is refused, ID or --next", async () => {
    const stateDir = newStateDir();
    dirs.push(stateDir);
    for (const args of [
      ["deny", "01M95GYS1Q2PM811SG8AHB299F", "--reason", ""],
      ["deny", "--next", "--reason="],
    ]) {
      const r = await runCli(args, { stateDir, env: passphraseEnv(), noTerminal: true });
      expect(r.stderr, args.join(" ")).toBe(
        "portcullis deny: --reason is empty; give the reason the agent is told, or leave the flag out to give none.\n",
      );
      expect(r.code).toBe(2);
    }
  });
});
