// `run --config FILE` names the file a LABEL is read from. Beside '-- COMMAND' or --url there is
// no label to read, and the flag was ignored without a word (even a file that does not exist):
// a user who put "approval": {"default": "per-call"} or credentials in that file got none of it.
// Refused instead, naming the flag. The real CLI.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

describe("run --config", () => {
  it("beside '-- COMMAND' or --url is refused, not ignored", async () => {
    const dir = tempDir();
    const file = join(dir, "portcullis.json");
    writeFileSync(file, JSON.stringify({ servers: { echo: { command: fixtureCommand("echo")[0] } } }));
    for (const [server, said] of [
      [["--", ...fixtureCommand("echo")], "'-- COMMAND'"],
      [["--url", "http://127.0.0.1:9/mcp"], "--url"],
    ] as const) {
      for (const config of [file, join(dir, "missing.json")]) {
        const r = await runCli(["run", "--config", config, ...server], {
          stateDir: newStateDir(),
          input: "",
        });
        expect(r.code).toBe(2);
        expect(r.stderr).toBe(
          `portcullis run: --config applies only with a LABEL of that file; a server given with ${said} reads nothing from it.\n`,
        );
      }
    }
  });
});

describe("run LABEL -- COMMAND", () => {
  it("is refused saying that a LABEL cannot go with '-- COMMAND' and that --label names such a server; the word is not shown", async () => {
    const r = await runCli(["run", "inventory-local", "--", ...fixtureCommand("echo")], {
      stateDir: newStateDir(),
      input: "",
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "portcullis run: unexpected argument (1, not shown: a passphrase or a secret is never given on the command line) before '--': a LABEL runs a server of portcullis.json and cannot go with '-- COMMAND'; to name a server given after '--', use --label NAME.\n",
    );
    expect(r.stderr).not.toContain("inventory-local");
  });
});

describe("run with no server", () => {
  it("names the three ways to give one, --url among them, as run --help does", async () => {
    for (const args of [["run"], ["run", "--label", "x"]]) {
      const r = await runCli(args, { stateDir: newStateDir(), input: "" });
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(
        "portcullis run: give a server LABEL from portcullis.json, '-- COMMAND [ARGS...]', or --url URL.\n",
      );
    }
  });
});
