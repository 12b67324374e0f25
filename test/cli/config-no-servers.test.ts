// A portcullis.json with no "servers" (an empty object, or only "console") is refused naming the
// key the file lacks: it was told that "mcpServers" (the alias it never wrote) must be an object.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

describe("a portcullis.json without servers", () => {
  it("is refused naming 'servers' (and its alias), exit 2, by run", async () => {
    const stateDir = newStateDir();
    for (const text of ["{}\n", '{"console": {"proofWindow": 60}}\n']) {
      const dir = tempDir();
      const file = join(dir, "portcullis.json");
      writeFileSync(file, text);
      const r = await runCli(["run", "inventory"], { stateDir, cwd: dir, input: "" });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe(
        `portcullis run: ${file}: has no "servers" (or its alias "mcpServers"): give the servers to run, by label, as {"servers": {"LABEL": {"command": …}}}.\n`,
      );
    }
  });

  it("a wrong type of either key still names the key written", async () => {
    const stateDir = newStateDir();
    for (const key of ["servers", "mcpServers"]) {
      const dir = tempDir();
      const file = join(dir, "portcullis.json");
      writeFileSync(file, JSON.stringify({ [key]: [] }));
      const r = await runCli(["run", "inventory"], { stateDir, cwd: dir, input: "" });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe(`portcullis run: ${file}: "${key}" must be an object of server labels.\n`);
    }
  });
});
