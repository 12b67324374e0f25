// A key a host does not read in a server entry ("arg" for "args", "envs", "cmd") starts the server
// without what it names. Wrap refuses that entry, naming the file, the server key and the unknown
// key with the one it most likely meant, wraps the others and exits 1; doctor names it too. The
// keys each host documents are taken. The real CLI in a fake home directory.
import { writeFileSync } from "node:fs";
import { parse as parseJsonc } from "jsonc-parser";
import { parse as parseToml } from "smol-toml";
import { describe, expect, it } from "vitest";
import { fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

// biome-ignore lint/suspicious/noExplicitAny: host documents are checked loosely
type Doc = any;

const wrappedLabel = (entry: Doc): string | undefined =>
  Array.isArray(entry.args) && entry.args.includes("--label")
    ? entry.args[entry.args.indexOf("--label") + 1]
    : undefined;

describe("wrap and a key the host does not read in a server entry", () => {
  it('JSON: "arg" and "envs" refused naming file, server and key with the key meant; the other server wrapped; exit 1', async () => {
    const u = user();
    const file = u.files["claude-code"];
    const before = {
      mcpServers: {
        typo: { command: "node", arg: ["server.js"] },
        both: { command: "node", args: ["y.js"], envs: { A: "1" }, cmd: "x" },
        good: { command: "node", args: ["z.js"], env: { A: "1" } },
      },
    };
    writeFileSync(file, JSON.stringify(before, null, 2));
    const r = await u.cli(["wrap", "claude-code"]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toContain(`${file}: wrapped good\n`);
    expect(r.stderr).toContain(
      `portcullis wrap: not wrapped: ${file}: server "typo" has "arg" (did you mean "args"?), a key Claude Code does not read in a server entry: the host starts the server without it, and wrap would put that mistake behind portcullis; rename it as suggested, then run wrap again.`,
    );
    // "cmd" beside a "command": the host reads "command", nothing is lost, so "cmd" is not named
    expect(r.stderr).toContain(
      `server "both" has "envs" (did you mean "env"?), a key Claude Code does not read in a server entry`,
    );
    const after: Doc = parseJsonc(read(file)).mcpServers;
    expect(after.typo).toEqual(before.mcpServers.typo);
    expect(after.both).toEqual(before.mcpServers.both);
    expect(wrappedLabel(after.good)).toBe("good");

    // --json: the refusal as data, the same exit
    writeFileSync(file, JSON.stringify(before, null, 2));
    const json = await u.cli(["wrap", "claude-code", "--dry-run", "--json"]);
    expect(json.code, json.stderr).toBe(1);
    const [report] = JSON.parse(json.stdout).files;
    expect(report.refused.map((x: { key: string }) => x.key)).toEqual(["typo", "both"]);
  });

  it('Codex TOML: "arg" refused with "did you mean", Codex\'s own keys (startup_timeout_sec, env_vars) taken', async () => {
    const u = user();
    const file = u.files.codex;
    writeFileSync(
      file,
      [
        "[mcp_servers.typo]",
        'command = "node"',
        'arg = ["server.js"]',
        "",
        "[mcp_servers.fine]",
        'command = "node"',
        'args = ["x.js"]',
        "startup_timeout_sec = 30",
        'env_vars = ["HOME"]',
        "",
      ].join("\n"),
    );
    const r = await u.cli(["wrap", "codex"]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(
      `not wrapped: ${file}: server "typo" has "arg" (did you mean "args"?), a key Codex does not read in a server entry`,
    );
    const doc: Doc = parseToml(read(file));
    expect(doc.mcp_servers.typo.command).toBe("node");
    expect(wrappedLabel(doc.mcp_servers.fine)).toBe("fine");
  });

  it("each host's documented keys are taken: VS Code's envFile and dev, Cursor's envFile", async () => {
    const u = user();
    writeFileSync(
      u.files.vscode,
      JSON.stringify({
        servers: { v: { type: "stdio", command: "node", args: ["x.js"], envFile: ".env", dev: {} } },
      }),
    );
    writeFileSync(
      u.files.cursor,
      JSON.stringify({ mcpServers: { c: { command: "node", envFile: ".env" } } }),
    );
    for (const host of ["vscode", "cursor"]) {
      const r = await u.cli(["wrap", host]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe("");
    }
    // keys near none the host reads are another client's or a newer host's: left as they are,
    // not refused (a list of keys cannot keep up with every host's releases)
    writeFileSync(
      u.files["claude-desktop"],
      JSON.stringify({
        mcpServers: {
          d: {
            command: "node",
            envFile: ".env",
            disabled: false,
            autoApprove: [],
            timeout: 60,
            gallery: true,
          },
        },
      }),
    );
    const desktop = await u.cli(["wrap", "claude-desktop"]);
    expect(desktop.code, desktop.stderr).toBe(0);
    expect(desktop.stderr).toBe("");
    const kept = JSON.parse(read(u.files["claude-desktop"])).mcpServers.d;
    expect(kept).toMatchObject({
      envFile: ".env",
      disabled: false,
      autoApprove: [],
      timeout: 60,
      gallery: true,
    });
  });

  it("a key that reads as a secret pasted in the wrong place is no typo of a key, and never repeated", async () => {
    const u = user();
    const file = u.files["claude-code"];
    const token = "ghp_Zq9x8w7v6u5t4s3r2q1pZq9x8w7v6u5t4s3r";
    writeFileSync(file, JSON.stringify({ mcpServers: { s: { command: "node", [token]: "" } } }));
    for (const args of [["wrap", "claude-code"], ["doctor"]]) {
      const r = await u.cli(args);
      expect(r.stdout + r.stderr).not.toContain("Zq9x8w7v6u5t4s3r");
    }
  });

  it("doctor names the key and the rename", async () => {
    const u = user();
    const file = u.files["claude-code"];
    writeFileSync(
      file,
      JSON.stringify({
        mcpServers: {
          typo: { command: "node", arg: ["server.js"] },
          good: { command: "node", args: ["z.js"] },
        },
      }),
    );
    // wrapped once, so that doctor's advice names the servers left (--servers): the refused one is not among them
    expect((await u.cli(["wrap", "claude-code", "--servers", "good"])).code).toBe(0);
    writeFileSync(
      file,
      read(file).replace('"good":', '"typo2": { "command": "node", "args": ["w.js"] }, "good":'),
    );
    const doctor = await u.cli(["doctor", "--json"]);
    const findings = (
      JSON.parse(doctor.stdout) as { findings: { ok: boolean; what: string; next: string }[] }
    ).findings;
    expect(findings).toContainEqual({
      ok: false,
      what: `${file}: "typo" has "arg" (did you mean "args"?), which Claude Code does not read in a server entry: the host starts the server without it`,
      next: 'rename "arg" to "args"',
    });
    const advice = findings.find((f) => f.what.startsWith(`${file}: not behind portcullis: `));
    expect(advice?.what).toBe(`${file}: not behind portcullis: typo2`);
    expect(advice?.next).toContain("--servers typo2");
  });
});
