// What wrap does inside one entry of a host file, and the entries it refuses or leaves alone with
// a reason: the real CLI in a fake home directory.
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CLI, NODE } from "../helpers/paths.js";
import { type FakeUser, fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

/** The args wrap writes for a server, on one line as it writes a list that stood on one line. */
function wrappedArgs(u: FakeUser, label: string, command: string, args: string[]): string {
  return `[${[CLI, "run", "--state-dir", u.stateDir, "--label", label, "--", command, ...args]
    .map((a) => JSON.stringify(a))
    .join(", ")}]`;
}

describe("wrap edits only command and args of a JSONC entry", () => {
  it("comments inside the entry, an inline env and trailing commas stay; unwrap after an edit elsewhere gives back the user's file with that edit", async () => {
    const u = user();
    const file = u.files.vscode;
    const before = [
      "{",
      '\t"servers": {',
      '\t\t"inv": {',
      "\t\t\t// dev build: run `npm run build` first!",
      '\t\t\t"command": "node",',
      '\t\t\t"args": ["dist/server.js"],',
      '\t\t\t"env": { "A": "1" }, // keep',
      "\t\t},",
      '\t\t"echo": { "command": "echo", /* no args */ "cwd": "/x" },',
      "\t},",
      "}",
      "",
    ].join("\n");
    writeFileSync(file, before);
    const wrap = await u.cli(["wrap", "vscode"]);
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(read(file)).toBe(
      before
        .replace('"command": "node",', `"command": ${JSON.stringify(NODE)},`)
        .replace('["dist/server.js"]', wrappedArgs(u, "inv", "node", ["dist/server.js"]))
        .replace(
          '{ "command": "echo", /*',
          `{ "command": ${JSON.stringify(NODE)}, "args": ${wrappedArgs(u, "echo", "echo", [])}, /*`,
        ),
    );
    // the host adds a server while the file is wrapped
    const edited = read(file).replace('"servers": {', '"servers": {\n\t\t"new": { "command": "echo" },');
    writeFileSync(file, edited);
    const unwrap = await u.cli(["unwrap", "vscode"]);
    expect(unwrap.code, unwrap.stderr).toBe(0);
    expect(unwrap.stdout).toContain("restored inv, echo");
    expect(read(file)).toBe(
      before.replace('"servers": {', '"servers": {\n\t\t"new": { "command": "echo" },'),
    );
  });
});

describe("entries wrap refuses or leaves alone, and why", () => {
  async function refused(u: FakeUser, args: string[], file: string, message: string) {
    const before = read(file);
    const r = await u.cli(args);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(`portcullis ${args[0]}: ${message}`);
    expect(read(file)).toBe(before);
    expect(existsSync(`${file}.portcullis-backup`)).toBe(false);
  }

  it("a server key written twice: refused naming the key and both lines (the host runs the last one)", async () => {
    const u = user();
    const file = u.files["claude-code"];
    writeFileSync(
      file,
      [
        "{",
        '  "mcpServers": {',
        '    "inv": { "command": "node", "args": ["old.js"] },',
        '    "docs": { "command": "npx" },',
        '    "inv": { "command": "node", "args": ["new.js"] }',
        "  }",
        "}",
        "",
      ].join("\n"),
    );
    const message = `${file}: "mcpServers" has the key "inv" twice (lines 3 and 5); the host keeps only the last, so remove one, then run wrap again; nothing was written.`;
    await refused(u, ["wrap", "claude-code"], file, message);
    await refused(u, ["wrap", "claude-code", "--dry-run"], file, message);
    // and within an entry: the command the host runs is the last one
    writeFileSync(file, '{"mcpServers": {\n"inv": {"command": "node",\n"command": "python3"}\n}}\n');
    await refused(
      u,
      ["wrap", file],
      file,
      `${file}: server "inv" has the key "command" twice (lines 2 and 3); the host keeps only the last, so remove one, then run wrap again; nothing was written.`,
    );
  });

  it('"args" that are not a list of strings: refused naming the file and the server', async () => {
    const u = user();
    const file = u.files["claude-code"];
    writeFileSync(file, '{ "mcpServers": { "a": { "command": "node", "args": "x.js" } } }\n');
    await refused(
      u,
      ["wrap", "claude-code"],
      file,
      `${file}: server "a" has "args" that are a string, not a list of strings; write them as a list of strings (e.g. "args": ["x.js"]), then run wrap again; nothing was written.`,
    );
    writeFileSync(file, '{ "mcpServers": { "a": { "command": "node", "args": ["x.js", 3] } } }\n');
    await refused(
      u,
      ["wrap", "claude-code"],
      file,
      `${file}: server "a" has "args" that are a list with values that are not strings, not a list of strings; write them as a list of strings (e.g. "args": ["x.js"]), then run wrap again; nothing was written.`,
    );
  });

  it("an entry with no command, or a command that is not a string, is left alone saying so (not called HTTP), never printing its value", async () => {
    const u = user();
    const file = u.files["claude-code"];
    writeFileSync(
      file,
      '{ "mcpServers": { "num": { "command": 42 }, "list": { "command": ["npx", "srv", "--api-key", "Zq9x8w7v6u5t4s3r2q1p"] }, "none": { "args": ["x.js"] }, "web": { "url": "https://x.example/mcp" } } }\n',
    );
    const r = await u.cli(["wrap", "claude-code"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      'left alone: num (its "command" is a number, not a string: the host cannot start it either)',
    );
    // a command line written as a list: said to be one, its words (a credential among them) not
    expect(r.stdout).toContain(
      'left alone: list (its "command" is a list, not a string: the host cannot start it either)',
    );
    expect(r.stdout + r.stderr).not.toContain("Zq9x8w7v6u5t4s3r");
    expect(r.stdout).toContain(
      'left alone: none (it has no "command" and no "url": the host cannot start it either)',
    );
    expect(r.stdout).toContain("left alone: web (an HTTP entry (url), which wrap leaves alone)");
  });

  it("an entry whose command or url key is mistyped: wrap and doctor name that key and the rename, in text and --json", async () => {
    const u = user();
    const file = u.files["claude-code"];
    writeFileSync(
      file,
      '{ "mcpServers": { "typo": { "comand": "node", "args": ["x.js"] }, "web": { "uri": "https://x.example/mcp" }, "bare": { "args": ["x.js"], "env": {} } } }\n',
    );
    const wrap = await u.cli(["wrap", "claude-code"]);
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(wrap.stdout).toContain(
      'left alone: typo (it has "comand", not "command", and no "url": the host cannot start it either)',
    );
    expect(wrap.stdout).toContain(
      'left alone: web (it has "uri", not "url", and no "command": the host cannot start it either)',
    );
    // no key near either name: said as before, nothing guessed
    expect(wrap.stdout).toContain(
      'left alone: bare (it has no "command" and no "url": the host cannot start it either)',
    );
    const doctor = await u.cli(["doctor", "--json"]);
    const findings = (JSON.parse(doctor.stdout) as { findings: { what: string; next: string }[] }).findings;
    const typo = findings.find((f) => f.what.startsWith(`${file}: "typo" `));
    expect(typo).toMatchObject({
      what: `${file}: "typo" is not a server the host can start (it has "comand", not "command", and no "url": the host cannot start it either)`,
      next: 'rename "comand" to "command", or remove the entry',
    });
    expect(findings.find((f) => f.what.startsWith(`${file}: "bare" `))?.next).toBe(
      'give it a "command" (a string) or a "url", or remove it',
    );
    const text = await u.cli(["doctor"]);
    expect(text.stdout).toContain('next: rename "comand" to "command", or remove the entry');
  });

  it("a TOML file that does not parse: the error names the line and the column", async () => {
    const u = user();
    const file = u.files.codex;
    writeFileSync(
      file,
      '[mcp_servers.a]\ncommand = "node"\nargs = ["x.js"\n\n[mcp_servers.b]\ncommand = "y"\n',
    );
    await refused(
      u,
      ["wrap", "codex"],
      file,
      `${file} is not valid TOML (expected comma or end of structure at line 5, column 1); nothing was written.`,
    );
  });

  it("a TOML [[mcp_servers.NAME]] array is not a server: wrap says so instead of passing it over", async () => {
    const u = user();
    const file = u.files.codex;
    writeFileSync(file, '[mcp_servers.a]\ncommand = "node"\n\n[[mcp_servers.weird]]\ncommand = "x"\n');
    const r = await u.cli(["wrap", "codex"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`${file}: wrapped a\n`);
    expect(r.stdout).toContain(
      'left alone: weird (not a server entry: "mcp_servers" → "weird" is an array of tables ([[…]]), not a table)',
    );
  });

  it("a directory where a host file is expected: one sentence naming it from wrap, doctor and drill, not an internal error", async () => {
    const u = user();
    const file = u.files["claude-code"];
    rmSync(file);
    mkdirSync(file);
    const said = `${file} cannot be read (it is a directory)`;
    for (const args of [
      ["wrap", "claude-code"],
      ["wrap", "--dry-run"],
      ["wrap", file],
    ]) {
      const r = await u.cli(args, u.project);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe(`portcullis wrap: ${said}; nothing was written.\n`);
    }
    const doctor = await u.cli(["doctor", "--json"], u.project);
    expect(doctor.code).toBe(1);
    expect(JSON.parse(doctor.stdout).findings).toContainEqual({
      ok: false,
      what: said,
      next: `fix ${file} (the host cannot read it either)`,
    });
    const drill = await u.cli(["drill", "inv"], u.project);
    expect(drill.code).toBe(2);
    expect(drill.stderr).toBe(`portcullis drill: ${said}.\n`);
  });

  it("doctor --json says which entries are HTTP, and which the host cannot start", async () => {
    const u = user();
    mkdirSync(u.stateDir, { recursive: true, mode: 0o700 });
    writeFileSync(
      u.files["claude-code"],
      '{ "mcpServers": { "a": { "command": "node" }, "web": { "type": "http", "url": "https://x.example/mcp" }, "num": { "command": 42 } } }\n',
    );
    const report = JSON.parse((await u.cli(["doctor", "--json"])).stdout);
    const code = report.hosts.find((h: { file: string }) => h.file === u.files["claude-code"]);
    expect(code.servers).toEqual([
      { key: "a", wrapped: false, kind: "stdio" },
      { key: "web", wrapped: false, kind: "http" },
      { key: "num", wrapped: false, kind: "unusable" },
    ]);
    expect(report.findings).toContainEqual({
      ok: true,
      what: `${u.files["claude-code"]}: "num" is not a server the host can start (its "command" is a number, not a string: the host cannot start it either)`,
      next: 'give it a "command" (a string) or a "url", or remove it',
    });
  });
});

describe("a host file saved with a byte order mark (as editors on Windows save UTF-8)", () => {
  const BOM = "\uFEFF";
  /** A list as smol-toml writes one inline, as wrap writes a TOML value. */
  const tomlList = (items: string[]) => `[ ${items.map((a) => JSON.stringify(a)).join(", ")} ]`;

  it("TOML: edited in place, the mark and every comment kept; unwrap gives back the bytes, also after an edit", async () => {
    const u = user();
    const file = u.files.codex;
    // the mark right before the first header: the line reader took it for part of the line and
    // wrap wrote the whole file again, without its comments and without the mark
    const before = `${BOM}[mcp_servers.inv]\n# dev build\ncommand = "node" # local\nargs = ["x.js"]\n\n# the docs server\n[mcp_servers.docs]\ncommand = "npx"\n`;
    writeFileSync(file, before);
    const wrap = await u.cli(["wrap", "codex"]);
    expect(wrap.code, wrap.stderr).toBe(0);
    const wrapped = before
      .replace('command = "node"', `command = ${JSON.stringify(NODE)}`)
      .replace(
        '["x.js"]',
        tomlList([CLI, "run", "--state-dir", u.stateDir, "--label", "inv", "--", "node", "x.js"]),
      )
      .replace(
        'command = "npx"\n',
        `command = ${JSON.stringify(NODE)}\nargs = ${tomlList([CLI, "run", "--state-dir", u.stateDir, "--label", "docs", "--", "npx"])}\n`,
      );
    expect(read(file)).toBe(wrapped);
    const unwrap = await u.cli(["unwrap", "codex"]);
    expect(unwrap.code, unwrap.stderr).toBe(0);
    expect(read(file)).toBe(before);
    // edited while wrapped: unwrap restores entry by entry, and the mark stays
    expect((await u.cli(["wrap", "codex"])).code).toBe(0);
    writeFileSync(file, `${read(file)}\n# added by hand\n`);
    const again = await u.cli(["unwrap", "codex"]);
    expect(again.code, again.stderr).toBe(0);
    expect(read(file)).toBe(`${before}\n# added by hand\n`);
  });

  it("JSON: read (not refused as InvalidSymbol at line 1), edited in place, written back with the mark; doctor reads it too", async () => {
    const u = user();
    const file = u.files["claude-code"];
    const before = `${BOM}{\n  // project servers\n  "mcpServers": {\n    "inv": { "command": "node", "args": ["x.js"] }\n  }\n}\n`;
    writeFileSync(file, before);
    const wrap = await u.cli(["wrap", file]);
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(wrap.stdout).toContain(`${file}: wrapped inv\n`);
    expect(read(file)).toBe(
      before
        .replace('"command": "node"', `"command": ${JSON.stringify(NODE)}`)
        .replace('["x.js"]', wrappedArgs(u, "inv", "node", ["x.js"])),
    );
    const doctor = await u.cli(["doctor", "--json"]);
    expect(doctor.stdout).not.toContain("does not parse");
    expect(doctor.stdout).toContain('"inv"');
    const unwrap = await u.cli(["unwrap", file]);
    expect(unwrap.code, unwrap.stderr).toBe(0);
    expect(read(file)).toBe(before);
  });
});
