// `portcullis run node dist/server.js` (the '--' forgotten) and `run LABEL extra` were answered
// "give a server LABEL from portcullis.json, …", and `drill LABEL extra` "give one server LABEL",
// which read as if no label was given. Two words are said to be two, neither shown (one may be
// a secret typed in the wrong place), with where the rest goes. The real CLI.
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) removeDir(d);
});

const SECRET = "sk-live-label-words-3c9e";

describe("a server LABEL given with a word too many", () => {
  it("run says how many words were given and that a command goes after '--'", async () => {
    const stateDir = newStateDir();
    const cwd = tempDir();
    dirs.push(stateDir, cwd);
    for (const words of [
      ["node", "dist/server.js"],
      ["inventory-local", SECRET],
    ]) {
      const r = await runCli(["run", ...words], { stateDir, cwd, input: "" });
      expect(r.stderr, words.join(" ")).toBe(
        "portcullis run: takes one server LABEL of portcullis.json (2 words were given, not shown); a command and its arguments go after '--': portcullis run --label NAME -- COMMAND [ARGS...].\n",
      );
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
    }
  });

  it("drill says how many words were given and where the file goes", async () => {
    const cwd = tempDir();
    dirs.push(cwd);
    const r = await runCli(["drill", "inventory-local", SECRET], { cwd, input: "" });
    expect(r.stderr).toBe(
      "portcullis drill: takes one server LABEL (2 words were given, not shown); the file it is read from is given with --file PATH.\n",
    );
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
  });

  it("with no word at all, each still names what to give", async () => {
    const stateDir = newStateDir();
    const cwd = tempDir();
    dirs.push(stateDir, cwd);
    const run = await runCli(["run"], { stateDir, cwd, input: "" });
    expect(run.stderr).toBe(
      "portcullis run: give a server LABEL from portcullis.json, '-- COMMAND [ARGS...]', or --url URL.\n",
    );
    const drill = await runCli(["drill"], { cwd, input: "" });
    expect(drill.stderr).toBe("portcullis drill: give one server LABEL.\n");
    expect([run.code, drill.code]).toEqual([2, 2]);
  });
});
