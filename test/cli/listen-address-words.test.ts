// A --listen address (or a configuration's "listen") that cannot be used is one sentence naming
// the flag or the key, and the sentence reads: "--listen its host must be …" and "--listen port
// 70000 is out of range" left the verb out. The real CLI; nothing is launched.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

const NAME = "has a host that is not an IP address or localhost (a name could resolve elsewhere)";

describe("a --listen address that cannot be used", () => {
  it("is a sentence naming the flag or the key", async () => {
    const stateDir = newStateDir();
    for (const [address, said] of [
      ["mcp.example.com:8765", NAME],
      ["256.1.1.1:8765", NAME],
      ["127.0.0.1:70000", "has the port 70000, out of range (0-65535)"],
    ] as const) {
      const flag = await runCli(["run", "--listen", address, "--", ...fixtureCommand("echo")], {
        stateDir,
        input: "",
      });
      expect(flag.code, address).toBe(2);
      expect(flag.stderr, address).toBe(`portcullis run: --listen ${said}.\n`);

      const dir = tempDir();
      const file = join(dir, "portcullis.json");
      const [command, ...args] = fixtureCommand("echo");
      writeFileSync(file, JSON.stringify({ servers: { echo: { command, args, listen: address } } }));
      const key = await runCli(["run", "--config", file, "echo"], { stateDir, input: "" });
      expect(key.code, address).toBe(2);
      expect(key.stderr, address).toBe(`portcullis run: ${file}: servers.echo.listen ${said}.\n`);
    }
  });
});
