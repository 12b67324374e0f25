// What `portcullis audit …` says, as a user reads it: every sentence starts with the command's
// prefix once ("portcullis audit SUB: …", or "portcullis audit: …" before a subcommand is known),
// never twice; `--json` is printed as every other command prints it (indented by two spaces). The
// real CLI against a state directory with a keyring.
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AuditLog, MAX_EXPORT_LINE_BYTES } from "../../src/audit/index.js";
import { openStore } from "../../src/store/db.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

describe("audit's sentences", () => {
  it("name the command once: no 'portcullis audit: portcullis audit …' or 'unknown audit subcommand'", async () => {
    const stateDir = newStateDir();
    const said = async (args: string[]) => {
      const r = await runCli(["audit", ...args], { stateDir });
      expect(r.code, r.stderr).toBe(2);
      return r.stderr;
    };
    expect(await said(["show"])).toBe("portcullis audit show: takes one record number (SEQ ≥ 1).\n");
    expect(await said(["show", "x"])).toBe("portcullis audit show: takes one record number (SEQ ≥ 1).\n");
    expect(await said(["bogus"])).toBe(
      "portcullis audit: unknown subcommand \"bogus\"; use verify, export, checkpoint, sessions, activity or show ('portcullis audit --help' says what each does).\n",
    );
    for (const args of [["show"], ["bogus"], ["verify", "--nope"], ["export", "x"]]) {
      const text = await said(args);
      expect(text.match(/audit/g)?.length, text).toBeLessThanOrEqual(2); // the prefix and the help's
      expect(text).not.toMatch(/portcullis audit: (portcullis )?audit\b/);
    }
  });
});

describe("audit --json", () => {
  it("is indented as status, catalog, approvals, vault list and doctor print theirs", async () => {
    const stateDir = join(tempDir(), "state");
    const env = passphraseEnv();
    const init = await runCli(["init"], { stateDir, env });
    expect(init.code, init.stderr).toBe(0); // the chain holds one record: the approver key's pin
    const indented = (text: string) => `${JSON.stringify(JSON.parse(text), null, 2)}\n`;
    const status = await runCli(["status", "--json"], { stateDir });
    expect(status.stdout).toBe(indented(status.stdout)); // what the others do
    for (const args of [
      ["verify", "--json"],
      ["checkpoint"],
      ["checkpoint", "--json"],
      ["sessions", "--json"],
      ["activity", "--json"],
      ["show", "1", "--json"],
    ]) {
      const r = await runCli(["audit", ...args], { stateDir, env });
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      expect(r.stdout, args.join(" ")).toBe(indented(r.stdout));
    }
  });
});

describe("audit verify --file", () => {
  it("an endless input (<(cat /dev/zero)) stops at the longest line an export can hold: exit 2 naming the file and the limit", async () => {
    const stateDir = newStateDir();
    const pipe = join(tempDir("portcullis-fifo-"), "zeros");
    expect(spawnSync("mkfifo", [pipe]).status).toBe(0);
    const zeros = spawn("sh", ["-c", 'exec cat /dev/zero > "$1"', "sh", pipe], { stdio: "ignore" });
    zeros.on("error", () => {});
    try {
      const r = await runCli(["audit", "verify", "--file", pipe], { stateDir, timeoutMs: 120_000 });
      expect(r.stderr).toBe(
        `portcullis audit verify: --file ${pipe}: line 1 is longer than ${MAX_EXPORT_LINE_BYTES.toLocaleString("en-US")} bytes, ` +
          "the longest line an audit export can hold, so it is not one; it was not read further.\n",
      );
      expect(r.code).toBe(2);
    } finally {
      zeros.kill();
    }
  }, 150_000);

  it("an export whose records span many read blocks (several MiB each) verifies", async () => {
    const stateDir = join(tempDir(), "state");
    expect((await runCli(["init"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    const db = openStore(stateDir);
    const log = AuditLog.open(db, stateDir);
    for (let i = 0; i < 3; i++)
      log.append({
        type: "server_started",
        serverLabel: "inv",
        epoch: `E${i}`,
        note: "n".repeat(3_000_000 + i),
      });
    db.close();
    const exported = await runCli(["audit", "export"], { stateDir });
    expect(exported.code, exported.stderr).toBe(0);
    const file = join(tempDir(), "export.jsonl");
    writeFileSync(file, exported.stdout);
    const r = await runCli(["audit", "verify", "--file", file, "--json"], { stateDir });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, records: 4 });
  });
});
