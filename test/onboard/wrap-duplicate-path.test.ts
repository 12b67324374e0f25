// A host file whose server table's own key is written twice: `{"mcpServers": {}, "mcpServers":
// {"a": …}}`, or a project's path twice under "projects" in ~/.claude.json. The host reads the
// last (JSON.parse); wrap edited the first (jsonc's lookups find the first) and said "wrapped a"
// while the host still ran it bare. Refused now, as a key twice inside a server table is: one
// sentence naming the file and both lines, exit 2, nothing written. Real CLI processes.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) removeDir(d);
  dirs = [];
});

describe("wrap: a server table's key written twice on its path", () => {
  for (const [name, fileName, text, said] of [
    [
      "the table itself",
      "mcp.json",
      '{\n  "mcpServers": {},\n  "mcpServers": {"a": {"command": "x"}}\n}\n',
      /"mcpServers" is written twice \(lines 2 and 3\)/,
    ],
    [
      "a project of ~/.claude.json",
      ".claude.json",
      // the project is the directory wrap runs in (PROJECT is replaced by it)
      '{"projects": {\n  "PROJECT": {"mcpServers": {"a": {"command": "x"}}},\n  "PROJECT": {"mcpServers": {"a": {"command": "y"}}}\n}}\n',
      /"projects" → "[^"]+" is written twice \(lines 2 and 3\)/,
    ],
  ] as const) {
    it(`${name}: refused, naming the file and both lines; nothing written`, async () => {
      const dir = tempDir("portcullis-wrap-dup-");
      dirs.push(dir);
      const file = join(dir, fileName);
      const written = text.replaceAll("PROJECT", dir);
      writeFileSync(file, written);
      const host = fileName === ".claude.json" ? ["claude-code"] : [file];
      const env: Record<string, string> = fileName === ".claude.json" ? { HOME: dir } : {};
      const r = await runCli(["wrap", ...host, "--state-dir", join(dir, "state")], {
        env,
        cwd: dir,
      });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(said);
      expect(r.stderr.split("\n").filter(Boolean)).toHaveLength(1);
      expect(readFileSync(file, "utf8")).toBe(written);
      expect(readdirSync(dir)).toEqual([fileName]);
    });
  }
});
