// A server reached by "url" sends the secrets of its "headers" with every request, whatever the
// tool. `tools.<tool>.credentials` was accepted for one all the same: `[]` made that tool's
// calls reviewed and recorded as using no credential (the audit's CREDENTIALS "-") while the
// bearer token went with them, and told the user the tool works while the vault is locked,
// which it does not (nothing reaches the server then); a scope named there was refused as "not one
// of this server's credentials (it declares none)" although its headers use it. Now the key is
// refused for such a server, naming it and why, before anything starts. The real CLI.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

function project(tools: unknown): { dir: string; file: string } {
  const dir = tempDir();
  const file = join(dir, "portcullis.json");
  const server = {
    url: "http://127.0.0.1:9/mcp",
    headers: { Authorization: { secret: "remote-token", format: "Bearer {}" } },
    tools,
  };
  writeFileSync(file, JSON.stringify({ servers: { remote: server } }));
  return { dir, file };
}

describe("tools.<tool>.credentials for a server reached by url", () => {
  for (const [what, scopes] of [
    ["none ([])", []],
    ["its header's secret", ["remote-token"]],
  ] as const) {
    it(`${what}: refused naming the key and why, nothing started`, async () => {
      const { dir, file } = project({ echo: { credentials: scopes } });
      const run = await runCli(["run", "remote"], { stateDir: newStateDir(), cwd: dir, input: "" });
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(
        `portcullis run: ${file}: servers.remote.tools.echo.credentials does not apply to a server reached by "url": the secrets of its "headers" go with every request to it, so every tool uses them; remove it.\n`,
      );
    });
  }
});
