// An unknown option's refusal names the help to read ("'portcullis X --help' lists the options").
// That help must be a command that exists: `audit verify --bogus` pointed to 'portcullis verify
// --help', which is refused as an unknown command. And the pointer is said once, not twice
// (`init --bogus` added "; see portcullis init --help" after the sentence that already said it).
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

const WITH_AN_UNKNOWN_OPTION = [
  ["status"],
  ["init"],
  ["audit", "verify"],
  ["audit", "export"],
  ["audit", "checkpoint"],
  ["audit", "sessions"],
  ["audit", "activity"],
  ["audit", "show"],
  ["catalog", "show", "x"],
  ["passkey", "list"],
  ["vault", "set", "x"],
  ["vault", "list"],
  ["unlock"],
  ["wrap"],
  ["doctor"],
];

describe("the help an unknown option's refusal points to", () => {
  it("exists (exit 0, a usage) and is named once", async () => {
    const stateDir = newStateDir();
    for (const words of WITH_AN_UNKNOWN_OPTION) {
      const refused = await runCli([...words, "--xyzzy"], { stateDir });
      const what = `${words.join(" ")} --xyzzy: ${refused.stderr}`;
      expect(refused.code, what).toBe(2);
      expect(refused.stderr.split("\n").filter(Boolean), what).toHaveLength(1);
      const pointers = [...refused.stderr.matchAll(/'?portcullis ([a-z ]+) --help'?/g)];
      expect(pointers, what).toHaveLength(1);
      const helpWords = pointers[0]![1]!.split(" ");
      const help = await runCli([...helpWords, "--help"], { stateDir });
      expect(help.code, `${what} → portcullis ${helpWords.join(" ")} --help: ${help.stderr}`).toBe(0);
      expect(help.stdout, what).toMatch(/^usage:/i);
      // and it is the help of the command refused, not another one
      expect(help.stdout, what).toContain(`portcullis ${words.slice(0, 2).join(" ").replace(/ x$/, "")}`);
    }
  });
});
