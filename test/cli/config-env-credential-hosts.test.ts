// A credential delivered in the environment ("deliver": "env") is the server's from its spawn on:
// it sends the value wherever it likes. A "hosts" list beside it was accepted and ignored, so a
// user who wrote one believed the secret limited to those hosts. Now `run` refuses the key, naming
// the file and why, before anything starts. The real CLI.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

describe("credentials.<VAR>.hosts beside deliver env", () => {
  it("is refused naming the file and the key, before anything starts", async () => {
    const dir = tempDir();
    const file = join(dir, "portcullis.json");
    const [command, ...args] = fixtureCommand("echo");
    const server = {
      command,
      args,
      credentials: { API_TOKEN: { secret: "api-token", deliver: "env", hosts: ["api.example.com"] } },
    };
    writeFileSync(file, JSON.stringify({ servers: { api: server } }));
    const run = await runCli(["run", "api"], { stateDir: newStateDir(), cwd: dir, input: "" });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toBe(
      `portcullis run: ${file}: servers.api.credentials.API_TOKEN.hosts does not apply to deliver "env": the server holds the value from its start and may send it anywhere; remove hosts, or deliver "http" to have the value sent only to those hosts.\n`,
    );
  });
});
