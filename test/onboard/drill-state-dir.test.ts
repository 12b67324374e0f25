// `drill` (and `demo`) run in a throwaway state directory they make for themselves. A user whose
// gateways use another state directory adds `--state-dir DIR` to every command, as the help says
// commands that use state take it; the drill answered that with the generic "unknown option
// --state-dir", which reads as if the directory were wrong. Now: the flag by name, the directory
// as other commands name one, and that it is neither needed nor touched; exit 2, before the label
// is looked up or a passphrase asked, nothing made where the flag points. The real CLI.
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";

const NOT_TAKEN = (command: string) =>
  `portcullis ${command}: --state-dir is not taken: the ${command} runs in a throwaway state directory it makes for itself`;
const LEAVE_OUT = "Leave --state-dir out: your gateways' state is neither needed nor touched.\n";

describe("--state-dir given to a command with a throwaway state directory of its own", () => {
  it("drill: refused by name, naming the directory, before anything is asked or made", async () => {
    const project = tempDir();
    const [command, ...args] = fixtureCommand("echo");
    writeFileSync(join(project, "portcullis.json"), JSON.stringify({ servers: { echo: { command, args } } }));
    const missing = join(project, "nowhere");
    const env = passphraseEnv();
    for (const given of [["--state-dir", missing], [`--state-dir=${missing}`]]) {
      const r = await runCli(["drill", "echo", ...given], { env, cwd: project });
      expect(r.stderr).toBe(
        `${NOT_TAKEN("drill")}, and never reads or writes the state directory ${missing} (given with --state-dir). ${LEAVE_OUT}`,
      );
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
    }
    expect(existsSync(missing)).toBe(false);
    // relative: named as it resolves; a label that does not exist is not reached either
    const relative = await runCli(["drill", "no-such-label", "--state-dir", "state"], { env, cwd: project });
    expect(relative.stderr).toBe(
      `${NOT_TAKEN("drill")}, and never reads or writes the state directory ${join(project, "state")} (given with --state-dir). ${LEAVE_OUT}`,
    );
    // empty ("$DIR" unset): no directory to name
    const empty = await runCli(["drill", "echo", "--state-dir", ""], { env, cwd: project });
    expect(empty.stderr).toBe(`${NOT_TAKEN("drill")}. ${LEAVE_OUT}`);
    expect(empty.code).toBe(2);
    expect(readdirSync(project)).toEqual(["portcullis.json"]);
  });

  it("demo: the same sentence", async () => {
    const dir = join(tempDir(), "state");
    const r = await runCli(["demo", "--state-dir", dir]);
    expect(r.stderr).toBe(
      `${NOT_TAKEN("demo")}, and never reads or writes the state directory ${dir} (given with --state-dir). ${LEAVE_OUT}`,
    );
    expect(r.code).toBe(2);
    expect(existsSync(dir)).toBe(false);
  });
});
