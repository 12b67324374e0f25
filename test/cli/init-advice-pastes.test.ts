// A command that needs the keyring, run on a state directory that has none, ends its sentence
// with the `portcullis init` to run, last and in no quotes of the sentence's own so that it pastes
// whole (README, "Approving calls"). It was followed by a period: for a directory that needs
// quoting, `--state-dir '/tmp/x/my state'.` pasted into a shell names "/tmp/x/my state.", another
// directory, which init then set up. The real CLI; the printed command is split by a real bash.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

/** The words bash reads from `line`, one per output line. */
function bashWords(line: string): string[] {
  const r = spawnSync("bash", ["-c", `printf '%s\\n' ${line}`], { encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.split("\n").slice(0, -1);
}

describe("no keyring: the init to run", () => {
  it("ends the sentence and pastes as the state directory given, a quoted one included", async () => {
    const dir = join(tempDir(), "my state");
    mkdirSync(dir, { mode: 0o700 });
    // a store and no keyring (the audit commands read the store before the keyring)
    copyFileSync(join(newStateDir(), "portcullis.db"), join(dir, "portcullis.db"));
    const commands: [string, string[]][] = [
      ["vault list", ["vault", "list"]],
      ["vault set", ["vault", "set", "api-key", "--deliver", "env", "--from-stdin"]],
      ["vault rm", ["vault", "rm", "api-key"]],
      ["unlock", ["unlock"]],
      ["console", ["console", "--no-open"]],
      ["audit sessions", ["audit", "sessions"]],
    ];
    for (const [name, args] of commands) {
      const r = await runCli([...args, "--state-dir", dir], { env: passphraseEnv(), input: "value" });
      expect(r.code, args.join(" ")).toBe(2);
      const said = `portcullis ${name}: there is no keyring in ${dir}; set it up first with: `;
      expect(r.stderr.startsWith(said), r.stderr).toBe(true);
      const command = r.stderr.slice(said.length).replace(/\n$/, "");
      expect(bashWords(command), args.join(" ")).toEqual(["portcullis", "init", "--state-dir", dir]);
    }
  });
});
