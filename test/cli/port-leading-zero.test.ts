// A port written with a leading zero (`--listen 127.0.0.1:08080`, `console --port 08080`, a
// configuration's "listen") is refused naming the flag or the key, as every other number
// portcullis reads is (a revision, a record's SEQ): it was read as 8080, a port other than the
// one a reader of the line (or a tool reading 0-prefixed numbers as octal) takes it for. The
// value is not repeated, as for every bad value of a known flag. Port 0 (any free port) is still
// `--listen HOST:0`. The real CLI; nothing is launched or listened on (each line also has a
// --listen-max-sessions refused after the address, so that a line whose port was taken ends at
// once there instead of serving; console's --idle-timeout 0 likewise).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

const NO_SESSIONS = ["--listen-max-sessions", "0"];
const SAID = "has a port written with a leading zero; write the port without it";

describe("a port with a leading zero", () => {
  it("run --listen and a configuration's listen refuse it, naming the flag or the key", async () => {
    const stateDir = newStateDir();
    for (const address of ["127.0.0.1:08080", "[::1]:00", "localhost:0443"]) {
      const flag = await runCli(
        ["run", ...NO_SESSIONS, "--listen", address, "--", ...fixtureCommand("echo")],
        {
          stateDir,
          input: "",
        },
      );
      expect(flag.code, address).toBe(2);
      expect(flag.stderr, address).toBe(`portcullis run: --listen ${SAID}.\n`);

      const file = join(tempDir(), "portcullis.json");
      const [command, ...args] = fixtureCommand("echo");
      writeFileSync(file, JSON.stringify({ servers: { echo: { command, args, listen: address } } }));
      const key = await runCli(["run", ...NO_SESSIONS, "--config", file, "echo"], { stateDir, input: "" });
      expect(key.code, address).toBe(2);
      expect(key.stderr, address).toBe(`portcullis run: ${file}: servers.echo.listen ${SAID}.\n`);
    }
  });

  it("console --port refuses it, naming the flag", async () => {
    const r = await runCli(["console", "--no-open", "--idle-timeout", "0", "--port", "08080"], {
      stateDir: newStateDir(),
    });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      "portcullis console: --port is written with a leading zero; write the port without it.\n",
    );
  });

  it("a credential's host, in vault set --host and in portcullis.json's hosts, refuses it, naming the flag or the key", async () => {
    // `api.example.com:0443` was stored as 443: a destination other than a reader may take it for
    const stateDir = newStateDir();
    const set = await runCli(
      ["vault", "set", "k", "--from-stdin", "--host", "api.example.com", "--host", "api.example.com:0443"],
      { stateDir, input: "a-value-of-some-length" },
    );
    expect(set.code).toBe(2);
    expect(set.stderr).toBe(`portcullis vault set: --host number 2 ${SAID}.\n`);
    const listed = await runCli(["vault", "list", "--json"], { stateDir });
    expect(JSON.parse(listed.stdout).secrets).toEqual([]);

    const file = join(tempDir(), "portcullis.json");
    const [command, ...args] = fixtureCommand("echo");
    const hosts = ["api.example.com:0443"];
    writeFileSync(
      file,
      JSON.stringify({ servers: { echo: { command, args, credentials: { K: { secret: "k", hosts } } } } }),
    );
    const key = await runCli(["run", "--config", file, "echo"], { stateDir, input: "" });
    expect(key.code).toBe(2);
    expect(key.stderr).toBe(
      `portcullis run: ${file}: servers.echo.credentials.K.hosts[0] "api.example.com:0443" ${SAID}.\n`,
    );
  });

  it("a server's URL, run --url and portcullis.json's url, refuses it, naming the flag or the key", async () => {
    // https://mcp.example.com:0443/mcp was reached at port 443; nothing is connected to here
    const stateDir = newStateDir();
    for (const url of [
      "https://mcp.example.com:0443/mcp",
      "http://[::1]:08080/mcp",
      "http://u@127.0.0.1:00/x",
    ]) {
      const flag = await runCli(["run", "--label", "r", "--url", url], { stateDir, input: "" });
      expect(flag.code, url).toBe(2);
      expect(flag.stderr, url).toMatch(new RegExp(`--url ${SAID}\\.\n$`));
      const file = join(tempDir(), "portcullis.json");
      writeFileSync(file, JSON.stringify({ servers: { r: { url } } }));
      const key = await runCli(["run", "--config", file, "r"], { stateDir, input: "" });
      expect(key.code, url).toBe(2);
      expect(key.stderr, url).toBe(`portcullis run: ${file}: servers.r.url ${SAID}.\n`);
    }
  });
});
