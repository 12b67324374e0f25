// What `wrap --dry-run` prints, and what wrap and doctor say of a host file that does not parse.
// Host files are the user's own, large and full of tokens: Claude Code's ~/.claude.json keeps
// every project's history (tens of thousands of lines), and a server's `env` holds its API keys
// (Codex writes `env = { GITHUB_PERSONAL_ACCESS_TOKEN = "…" }` on the line after `args`). A dry
// run is the first thing the README and doctor tell a user to run. The real CLI in a fake home.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { looksGenerated } from "../../src/util/redact.js";
import { runCli } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

const TOKEN = "ghp_9Rk2THESECRETw8Lq4Zp0Yx7Vb3Nc5Md1";

describe("wrap --dry-run", () => {
  it("a ~/.claude.json of 40,000 lines with servers at both ends: the diff, within a small heap", async () => {
    const u = user();
    // the user's servers at the top, this project's at the end, other projects' history between
    const projects: Record<string, unknown> = {};
    for (let i = 0; i < 5000; i++)
      projects[`/home/u/p${i}`] = { history: [{ display: `fix the build ${i}`, pastedContents: {} }] };
    projects[u.project] = { mcpServers: { "proj-server": { command: "node", args: ["proj.js"] } } };
    const file = join(u.home, ".claude.json");
    const text = JSON.stringify(
      { mcpServers: { "user-server": { command: "node", args: ["user.js"] } }, numStartups: 3, projects },
      null,
      2,
    );
    expect(text.split("\n").length).toBeGreaterThan(40_000);
    writeFileSync(file, text);
    rmSync(u.files["claude-code"]); // only ~/.claude.json: the project has no .mcp.json
    // A line-by-line table of the two texts (the diff this replaced) needs 1.6 billion cells here:
    // with a 256 MB heap, as with the default one after 40 s and 4 GB, it ran out of memory.
    const r = await runCli(["wrap", "claude-code", "--dry-run"], {
      env: { ...u.env, NODE_OPTIONS: "--max-old-space-size=256" },
      cwd: u.project,
    });
    expect(r.stderr).not.toMatch(/heap|FATAL/);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`--- ${file}\n`);
    expect(r.stdout).toMatch(/^- {7}"command": "node",$/m); // the user's server
    expect(r.stdout).toMatch(/^- {11}"command": "node",$/m); // the project's, 40,000 lines on
    expect(
      r.stdout.match(
        new RegExp(`^\\+ +"command": ${JSON.stringify(JSON.stringify(NODE)).slice(1, -1)},$`, "gm"),
      ),
    ).toHaveLength(2);
    expect(r.stdout).toContain(`${file}: would wrap proj-server, user-server`);
    // the unchanged history is elided, not printed
    expect(r.stdout.split("\n").length).toBeLessThan(100);
    expect(read(file)).toBe(text);
  });

  it("prints no token of the host file: values under secret-like names and token shapes are redacted", async () => {
    const u = user();
    writeFileSync(
      u.files.codex,
      [
        "[mcp_servers.github]",
        'command = "npx"',
        'args = ["-y", "@modelcontextprotocol/server-github"]',
        `env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${TOKEN}" }`,
        "",
      ].join("\n"),
    );
    // one line per entry, as `claude mcp add-json` users and hand-written files have them
    writeFileSync(
      u.files["claude-code"],
      `{"mcpServers": {"gh": {"command": "npx", "args": ["-y", "gh-mcp", "--api-key=${TOKEN}"], "env": {"GITHUB_TOKEN": "${TOKEN}"}}}}\n`,
    );
    for (const host of ["codex", "claude-code"]) {
      const r = await u.cli(["wrap", host, "--dry-run"]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("[redacted]");
      expect(r.stdout).toMatch(/^\+ .*"run", "--state-dir", /m); // what changes is still shown
      expect(r.stdout + r.stderr, host).not.toContain("THESECRET");
    }
  });

  it("prints no value of a server's command line that is a secret: after a secret-named flag in the next word, or generated-looking after any flag", async () => {
    const u = user();
    const GENERATED = "a8Fk29dkLq0Zp3mXv7Bn4THESECRET1Hs5Jc";
    // each word its own array element: the flag and its value on one line, or on two
    writeFileSync(
      u.files.codex,
      [
        "[mcp_servers.inv]",
        'command = "node"',
        `args = ["server.js", "--password", "hunter2-THESECRET", "--x", "${GENERATED}", "--port", "8080"]`,
        `env = { LOG_LEVEL = "debug", DD_SITE_KEY2 = "${GENERATED}" }`,
        "",
      ].join("\n"),
    );
    // a flag and its value on two lines, as a hand-written file has them
    writeFileSync(
      u.files["claude-code"],
      [
        "{",
        '  "mcpServers": {',
        '    "inv": {',
        '      "command": "node",',
        '      "args": ["server.js", "--password",',
        `               "pw-THESECRET", "--x", "${GENERATED}", "--name", "inventory"]`,
        "    }",
        "  }",
        "}",
        "",
      ].join("\n"),
    );
    for (const host of ["codex", "claude-code"]) {
      const r = await u.cli(["wrap", host, "--dry-run"]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout + r.stderr, host).not.toContain("THESECRET");
      // the flag, then its value redacted, on the same line or the next
      expect(r.stdout, host).toMatch(/"--password",(?: |\n[-+ ] +)"\[redacted\]"/);
      expect(r.stdout, host).toMatch(/"--x", "\[redacted\]"|"--x",\n[-+ ] +"\[redacted\]"/);
      if (host === "claude-code") expect(r.stdout).toMatch(/^\+ +"inventory"$/m); // no secret: shown
    }
    // what is no secret is still shown: what changes, and the other words
    const toml = await u.cli(["wrap", "codex", "--dry-run"]);
    expect(toml.stdout).toMatch(/^\+ args = .*"--port", "8080"/m);
  });

  it("writes a character a terminal would act on as an escape", async () => {
    const u = user();
    writeFileSync(
      u.files["claude-code"],
      '{\n  // \u001b]0;owned\u0007 a comment from a cloned repository\n  "mcpServers": {"a": {"command": "node", "args": ["a.js"]}}\n}\n',
    );
    const r = await u.cli(["wrap", "claude-code", "--dry-run"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("\\u001b]0;owned\\u0007");
    expect(r.stdout).not.toContain("\u001b");
  });

  it("a change on the file's last line: no blank context line for the newline that ends it", async () => {
    const u = user();
    const file = u.files["claude-code"];
    const before = '{"mcpServers": {"a": {"command": "node", "args": ["a.js"]}}}\n';
    writeFileSync(file, before);
    const r = await u.cli(["wrap", "claude-code", "--dry-run"]);
    expect(r.code, r.stderr).toBe(0);
    // the diff is the two headers and the line replaced; the summary line follows it at once
    const lines = r.stdout.split("\n");
    expect(lines.slice(0, 3)).toEqual([`--- ${file}`, `+++ ${file} (wrapped)`, `- ${before.trimEnd()}`]);
    expect(lines[3]).toMatch(/^\+ \{"mcpServers": \{"a": \{"command": /);
    expect(lines[4]).toBe(`${file}: would wrap a`);
    expect(read(file)).toBe(before);
  });
});

describe("a host file that does not parse", () => {
  it("TOML: wrap and doctor name the line and the column, and quote none of it", async () => {
    const u = user();
    // a value written without its quotes
    writeFileSync(
      u.files.codex,
      `[mcp_servers.github]\ncommand = "npx"\nenv = { GITHUB_PERSONAL_ACCESS_TOKEN = ${TOKEN} }\n`,
    );
    const said = `${u.files.codex} is not valid TOML (invalid value at line 3, column 40)`;
    const wrap = await u.cli(["wrap", "codex"]);
    expect(wrap.code).toBe(2);
    expect(wrap.stderr).toBe(`portcullis wrap: ${said}; nothing was written.\n`);
    const doctor = await u.cli(["doctor"]);
    expect(doctor.stdout).toContain(said);
    const json = await u.cli(["doctor", "--json"]);
    expect(json.stdout).toContain(said);
    for (const r of [wrap, doctor, json]) expect(r.stdout + r.stderr).not.toContain("THESECRET");
  });

  it("JSON: the line and the column, and what is wrong in words", async () => {
    const u = user();
    writeFileSync(
      u.files["claude-code"],
      `{"mcpServers": {"gh": {"command": "npx",\n  "env": {"GITHUB_TOKEN": ${TOKEN}}}}}\n`,
    );
    const r = await u.cli(["wrap", "claude-code", "--dry-run"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis wrap: ${u.files["claude-code"]} does not parse (line 2, column 27: something that is not a JSON value, such as a string without its double quotes); nothing was written.\n`,
    );
    mkdirSync(join(u.root, "t"), { recursive: true });
    const trailing = join(u.root, "t", "mcp.json");
    writeFileSync(trailing, '{"mcpServers": {"a": {"command": "node"}}\n');
    const t = await u.cli(["wrap", trailing]);
    expect(t.stderr).toBe(
      `portcullis wrap: ${trailing} does not parse (line 2, column 1: '}' was expected); nothing was written.\n`,
    );
  });

  it("shows a server's script by its path when it exists, though the path reads as generated; a generated word that is no path stays hidden", async () => {
    const u = user();
    // as npm installs a server: a digit in a folder's name and a long run of letters read as a key
    const script = join(
      u.project,
      "build2026",
      "node_modules",
      "@modelcontextprotocol",
      "server-memory",
      "index.js",
    );
    mkdirSync(join(script, ".."), { recursive: true });
    writeFileSync(script, "");
    expect(looksGenerated(script)).toBe(true);
    const GENERATED = "/a8Fk29dkLq0Zp3mXv7Bn4THESECRET1Hs5Jc";
    writeFileSync(
      u.files["claude-code"],
      `${JSON.stringify({ mcpServers: { mem: { command: "node", args: [script, GENERATED], env: { MEMORY_FILE_PATH: script } } } })}\n`,
    );
    const r = await u.cli(["wrap", "claude-code", "--dry-run"]);
    expect(r.code, r.stderr).toBe(0);
    // on one line, as `claude mcp add-json` writes it: the rewritten entry shows the script after "--"
    const added = r.stdout.split("\n").filter((l) => l.startsWith("+"));
    expect(
      added.some((l) => l.includes(JSON.stringify(script))),
      r.stdout,
    ).toBe(true);
    expect(r.stdout).toContain(`"MEMORY_FILE_PATH":${JSON.stringify(script)}`);
    expect(r.stdout).not.toContain("THESECRET");
  });
});
