// portcullis.json is found upward from the working directory. A portcullis.json there that is a
// symbolic link whose target is gone (the config moved, a checkout without the linked file) was
// passed over as absent, and the search went on to a portcullis.json above, another project's,
// whose server of that label then ran, with its approval modes and credentials. The name found is
// the file: it is refused naming it and why. The real CLI.
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

describe("a portcullis.json that is a dangling symbolic link", () => {
  it("is the file found: refused naming it, never passed over for the one above", async () => {
    const above = tempDir();
    const [command, ...args] = fixtureCommand("echo");
    writeFileSync(join(above, "portcullis.json"), JSON.stringify({ servers: { echo: { command, args } } }));
    const project = join(above, "project");
    mkdirSync(project);
    const link = join(project, "portcullis.json");
    symlinkSync(join(above, "moved-away.json"), link);
    const stateDir = newStateDir();
    const run = await runCli(["run", "echo"], { stateDir, cwd: project, input: "" });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `portcullis run: ${link}: cannot be read: it is a symbolic link whose target does not exist (ENOENT).\n`,
    );
    // vault list reads the same file to say who uses each secret: a warning naming it
    const list = await runCli(["vault", "list"], { stateDir, cwd: project, input: "" });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stderr).toContain(
      `${link}: cannot be read: it is a symbolic link whose target does not exist`,
    );
  });
});
