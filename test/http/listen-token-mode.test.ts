// The bearer token is what keeps the machine's other users out of a `run --listen` server (a
// loopback port is open to all of them), and the generated one is kept 0600. A token file given
// with --listen-token-file that others may read or change (a file written with the usual umask
// is 0644) was taken as it was; it is refused, naming the file, its mode and the chmod, before
// anything listens. The real CLI.
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

describe("--listen-token-file that others may read or change", () => {
  it("is refused with its mode and the chmod that fixes it; the file the user made private is taken", async () => {
    const stateDir = newStateDir();
    const file = join(tempDir(), "team token");
    writeFileSync(file, "a-token-chosen-by-the-user-0123456789\n");
    const start = () =>
      runCli(
        ["run", "--listen", "127.0.0.1:0", "--listen-token-file", file, "--", ...fixtureCommand("echo")],
        {
          stateDir,
          input: "",
          timeoutMs: 15_000,
        },
      );
    for (const mode of [0o644, 0o640, 0o602]) {
      chmodSync(file, mode);
      const r = await start();
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe(
        `portcullis run: --listen-token-file ${file}: other users may read or change it (mode ${mode.toString(8)}), and the token is what keeps them out of the server; make it yours alone with chmod 600 '${file}', then start the gateway again.\n`,
      );
      expect(r.stderr).not.toContain("a-token-chosen");
    }
  });

  it("given by portcullis.json, a problem of the file names the key and the configuration, not a flag the user never gave", async () => {
    const stateDir = newStateDir();
    const dir = tempDir();
    const config = join(dir, "portcullis.json");
    const [command, ...args] = fixtureCommand("echo");
    const token = join(dir, "team.token");
    writeFileSync(token, "a-token-chosen-by-the-user-0123456789\n", { mode: 0o644 });
    chmodSync(token, 0o644);
    writeFileSync(
      config,
      JSON.stringify({
        servers: { echo: { command, args, listen: "127.0.0.1:0", listenTokenFile: "team.token" } },
      }),
    );
    const shared = await runCli(["run", "--config", config, "echo"], {
      stateDir,
      input: "",
      timeoutMs: 15_000,
    });
    expect(shared.code, shared.stderr).toBe(2);
    expect(shared.stderr).toBe(
      `portcullis run: listenTokenFile of "echo" in ${config} (${token}): other users may read or change it (mode 644), and the token is what keeps them out of the server; make it yours alone with chmod 600 ${token}, then start the gateway again.\n`,
    );
    writeFileSync(
      config,
      JSON.stringify({
        servers: { echo: { command, args, listen: "127.0.0.1:0", listenTokenFile: "missing.token" } },
      }),
    );
    const missing = await runCli(["run", "--config", config, "echo"], {
      stateDir,
      input: "",
      timeoutMs: 15_000,
    });
    expect(missing.code, missing.stderr).toBe(2);
    expect(missing.stderr).toBe(
      `portcullis run: listenTokenFile of "echo" in ${config} (${join(dir, "missing.token")}): cannot read it: it does not exist; check the path (ENOENT).\n`,
    );
  });

  it("run --help says the file must be the user's alone", async () => {
    const help = await runCli(["run", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(
      /--listen-token-file FILE +the bearer token clients must send, on the first line of a file\n +only you may read \(chmod 600;/,
    );
  });
});
