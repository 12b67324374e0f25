// A portcullis.json that is not JSON is refused naming the file, the line and the column, in
// words, and never with the file's text: V8's JSON.parse message quotes the characters around the
// error (`Unexpected token 's', ..."{"TOKEN": sk-live-7f"... is not valid JSON`), and a token
// pasted into `env` without its quotes is exactly where the file stops being JSON. A gateway's
// stderr is its host's MCP log. The real CLI: `run LABEL` (a gateway), `drill LABEL` and `vault
// list` (which warns with the same sentence).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

const SECRET = "sk-live-7f3c9a1e44b2THESECRET";

function project(text: string): { dir: string; file: string } {
  const dir = tempDir();
  const file = join(dir, "portcullis.json");
  writeFileSync(file, text);
  return { dir, file };
}

describe("a portcullis.json that is not JSON", () => {
  it("names the line and column, says what is wrong, and quotes none of the file", async () => {
    const cases: [string, string][] = [
      // the value pasted from a .env file without its quotes
      [
        `{"servers": {"a": {"command": "node",\n  "env": {"TOKEN": ${SECRET}}}}}\n`,
        "line 2, column 20: something that is not a JSON value, such as a string without its double quotes",
      ],
      // a trailing comma right after the token: V8 quotes the characters before the error
      [
        `{"servers": {"a": {"command": "node", "env": {"TOKEN": "${SECRET}",}}}}\n`,
        "line 1, column 87: a comma before '}', which JSON does not allow",
      ],
      [
        `{"servers": {"a": {"command": "node" "env": {"TOKEN": "${SECRET}"}}}}`,
        "line 1, column 38: ',' was expected",
      ],
      ["\n  \n", "the file is empty"],
    ];
    const stateDir = newStateDir();
    for (const [text, said] of cases) {
      const { dir, file } = project(text);
      for (const args of [
        ["run", "a"],
        ["drill", "a"],
      ]) {
        const r = await runCli(args, { stateDir, cwd: dir, input: "" });
        const shown = `${args.join(" ")} on ${JSON.stringify(text)}: exit ${r.code}\n${r.stderr}`;
        expect(r.code, shown).toBe(2);
        expect(r.stderr, shown).toBe(`portcullis ${args[0]}: ${file}: not valid JSON (${said}).\n`);
        // V8's snippet holds ten characters either side: not even the token's start is shown
        expect(r.stdout + r.stderr, shown).not.toContain("sk-live");
      }
      const list = await runCli(["vault", "list"], { stateDir, cwd: dir });
      expect(list.code, list.stderr).toBe(0);
      expect(list.stderr).toContain(`${file}: not valid JSON (${said})`);
      expect(list.stdout + list.stderr).not.toContain("sk-live");
    }
  });
});
