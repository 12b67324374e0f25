// portcullis wrap / unwrap against real copies of each host's configuration format, run as the
// real CLI in a fake home directory.
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  renameSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { parse as parseJsonc } from "jsonc-parser";
import { parse as parseToml } from "smol-toml";
import { describe, expect, it } from "vitest";
import { listGateways } from "../../src/gateway/registry.js";
import { writerStamp } from "../../src/onboard/hostTemps.js";
import { openStore } from "../../src/store/db.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { CLI, FIXTURES, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { type FakeUser, fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

// biome-ignore lint/suspicious/noExplicitAny: host documents are checked loosely
type Doc = any;

const HOST_CASES = [
  {
    host: "claude-code",
    table: "mcpServers",
    wrapped: ["inventory-local", "docs search"],
    alone: ["remote"],
  },
  { host: "claude-desktop", table: "mcpServers", wrapped: ["filesystem"], alone: [] },
  { host: "cursor", table: "mcpServers", wrapped: ["inventory"], alone: ["linear"] },
  { host: "vscode", table: "servers", wrapped: ["memory"], alone: ["github"] },
  { host: "codex", table: "mcp_servers", wrapped: ["inventory", "docs"], alone: [] },
] as const;

describe("wrap then unwrap, each host format", () => {
  for (const c of HOST_CASES) {
    it(`${c.host}: wraps every stdio server, leaves HTTP alone, unwrap gives back the same bytes`, async () => {
      const u = user();
      const file = u.files[c.host];
      const before = read(file);
      const wrap = await u.cli(["wrap", c.host]);
      expect(wrap.stderr).toBe("");
      expect(wrap.code).toBe(0);
      const after = read(file);
      expect(after).not.toBe(before);
      expect(read(`${file}.portcullis-backup`)).toBe(before);
      const doc: Doc = c.host === "codex" ? parseToml(after) : parseJsonc(after);
      const orig: Doc = c.host === "codex" ? parseToml(before) : parseJsonc(before);
      for (const key of c.wrapped) {
        const e = doc[c.table][key];
        const o = orig[c.table][key];
        expect(e.command).toBe(NODE);
        expect(e.args.slice(0, 2)).toEqual([CLI, "run"]);
        const sep = e.args.indexOf("--");
        expect(e.args.slice(sep + 1)).toEqual([o.command, ...(o.args ?? [])]);
        expect(e.args[e.args.indexOf("--state-dir") + 1]).toBe(u.stateDir);
        expect(e.args[e.args.indexOf("--label") + 1]).toBe(key.replace(/ /g, "-"));
        expect(e.env).toEqual(o.env);
        expect(e.cwd).toEqual(o.cwd);
      }
      for (const key of c.alone) expect(doc[c.table][key]).toEqual(orig[c.table][key]);

      const unwrap = await u.cli(["unwrap", c.host]);
      expect(unwrap.code).toBe(0);
      expect(unwrap.stdout).toContain("restored byte for byte");
      expect(read(file)).toBe(before);
    });
  }

  it("JSONC: comments, trailing commas and tabs around the edited entry survive the wrap", async () => {
    const u = user();
    await u.cli(["wrap", "cursor"]);
    const after = read(u.files.cursor);
    for (const kept of [
      "// Cursor project servers (JSONC: comments and trailing commas are allowed)",
      "\t\t// the inventory server we build here",
      '\t\t/* a remote one */\n\t\t"linear": { "url": "https://mcp.linear.app/sse" },',
    ])
      expect(after).toContain(kept);
    const v = read(u.files.vscode);
    expect(v).toContain('// VS Code keeps servers under "servers"');
  });

  it("Codex TOML: only the wrapped values change (comments, order, quoting and other tables stay); unwrap after an edit gives back the user's file byte for byte", async () => {
    const u = user();
    const file = u.files.codex;
    const before = [
      "# Codex CLI configuration",
      'model = "o4-mini"   # the default model',
      "",
      "# servers I use every day",
      "[mcp_servers.inventory]",
      "# built from this repo",
      'command = "node"   # node from PATH',
      "args = [",
      '  "dist/server.js",   # the entry',
      '  "--verbose",',
      "]",
      'env = { LOG_LEVEL = "debug" }',
      "",
      "[mcp_servers.inventory.tools.search]",
      'approval_mode = "approve"',
      "",
      "[mcp_servers.'docs search']",
      "command = 'npx'",
      "# no args: wrap adds them",
      "",
      "[profiles.fast]",
      'model = "gpt-4.1" # fast',
      "",
    ].join("\n");
    writeFileSync(file, before);
    const argsOf = (label: string, command: string, args: string[]) =>
      `args = [ ${[CLI, "run", "--state-dir", u.stateDir, "--label", label, "--", command, ...args]
        .map((a) => JSON.stringify(a))
        .join(", ")} ]`;
    const expected = before
      .replace('command = "node"   #', `command = ${JSON.stringify(NODE)}   #`)
      .replace(
        'args = [\n  "dist/server.js",   # the entry\n  "--verbose",\n]',
        argsOf("inventory", "node", ["dist/server.js", "--verbose"]),
      )
      .replace(
        "command = 'npx'\n",
        `command = ${JSON.stringify(NODE)}\n${argsOf("docs-search", "npx", [])}\n`,
      );

    const wrap = await u.cli(["wrap", "codex"]);
    expect(wrap.code, wrap.stderr).toBe(0);
    expect(read(file)).toBe(expected);

    // the host (or the user) edits the file while it is wrapped: unwrap restores only wrap's values
    writeFileSync(file, `${read(file)}# added while wrapped\n`);
    const unwrap = await u.cli(["unwrap", "codex"]);
    expect(unwrap.code, unwrap.stderr).toBe(0);
    expect(read(file)).toBe(`${before}# added while wrapped\n`);

    // and a round trip with no edit in between is exact too
    expect((await u.cli(["wrap", "codex"])).code).toBe(0);
    expect((await u.cli(["unwrap", "codex"])).code).toBe(0);
    expect(read(file)).toBe(`${before}# added while wrapped\n`);
  });

  it("Codex TOML: servers as inline tables and with dotted keys are edited in place too; unwrap after an edit gives back the user's file", async () => {
    const u = user();
    const args = (label: string, command: string, rest: string[]) =>
      `[ ${[CLI, "run", "--state-dir", u.stateDir, "--label", label, "--", command, ...rest]
        .map((a) => JSON.stringify(a))
        .join(", ")} ]`;
    const node = JSON.stringify(NODE);
    // inline tables and dotted keys under [mcp_servers]
    const inline = [
      "# Codex CLI configuration",
      'model = "o4-mini"',
      "",
      "[mcp_servers]",
      "# one line each",
      'docs = { command = \'npx\', args = ["-y", "docs-mcp"], env = { A = "1" } }   # docs',
      'search = {command="uvx"}  # no args: wrap adds them',
      "",
      'web.command = "node"        # dotted keys under the table',
      "web.args = [",
      '  "web.js", # entry',
      "]",
      'remote = { url = "https://example.com/mcp" }',
      "",
      "[profiles.fast]",
      'model = "gpt-4.1"',
      "",
    ].join("\n");
    const inlineWrapped = inline
      .replace(
        'docs = { command = \'npx\', args = ["-y", "docs-mcp"],',
        `docs = { command = ${node}, args = ${args("docs", "npx", ["-y", "docs-mcp"])},`,
      )
      .replace('search = {command="uvx"}', `search = {command=${node}, args = ${args("search", "uvx", [])}}`)
      .replace('web.command = "node"', `web.command = ${node}`)
      .replace('web.args = [\n  "web.js", # entry\n]', `web.args = ${args("web", "node", ["web.js"])}`);
    // dotted keys from the top of the document, beside an ordinary section
    const dotted = [
      "# dotted keys at the top level",
      'mcp_servers.inventory.command = "node"   # node from PATH',
      "mcp_servers . inventory . env = { LOG_LEVEL = 'debug' }",
      "",
      "[mcp_servers.other]",
      'command = "deno"',
      'args = ["run", "other.ts"]',
      "",
    ].join("\n");
    const dottedWrapped = dotted
      .replace(
        'mcp_servers.inventory.command = "node"   # node from PATH\n',
        `mcp_servers.inventory.command = ${node}   # node from PATH\nmcp_servers.inventory.args = ${args("inventory", "node", [])}\n`,
      )
      .replace('command = "deno"', `command = ${node}`)
      .replace('args = ["run", "other.ts"]', `args = ${args("other", "deno", ["run", "other.ts"])}`);

    for (const [name, before, expected] of [
      ["inline.toml", inline, inlineWrapped],
      ["dotted.toml", dotted, dottedWrapped],
    ] as const) {
      const file = join(u.root, name);
      writeFileSync(file, before);
      const wrap = await u.cli(["wrap", file]);
      expect(wrap.code, wrap.stderr).toBe(0);
      expect(read(file), name).toBe(expected);
      // edited while wrapped: unwrap restores only wrap's values, in place
      writeFileSync(file, `${read(file)}# added while wrapped\n`);
      const unwrap = await u.cli(["unwrap", file]);
      expect(unwrap.code, unwrap.stderr).toBe(0);
      expect(read(file), name).toBe(`${before}# added while wrapped\n`);
    }
  });

  it("a FILE argument works like a host name", async () => {
    const u = user();
    const before = read(u.files["claude-code"]);
    expect((await u.cli(["wrap", u.files["claude-code"]])).code).toBe(0);
    expect(read(u.files["claude-code"])).not.toBe(before);
    expect((await u.cli(["unwrap", u.files["claude-code"]])).code).toBe(0);
    expect(read(u.files["claude-code"])).toBe(before);
  });

  it("a configuration kept as a symlink stays a symlink; the file it points to is rewritten and restored", async () => {
    const u = user();
    const real = join(u.root, "dotfiles", "mcp.json");
    mkdirSync(dirname(real), { recursive: true });
    renameSync(u.files["claude-code"], real);
    symlinkSync(real, u.files["claude-code"]);
    const before = read(real);
    expect((await u.cli(["wrap", "claude-code"])).code).toBe(0);
    expect(lstatSync(u.files["claude-code"]).isSymbolicLink()).toBe(true);
    expect(read(real)).not.toBe(before);
    expect((await u.cli(["unwrap", "claude-code"])).code).toBe(0);
    expect(lstatSync(u.files["claude-code"]).isSymbolicLink()).toBe(true);
    expect(read(real)).toBe(before);
  });

  it("Claude Code's ~/.claude.json: the user's servers and this project's own are wrapped, other projects' are not", async () => {
    const u = user();
    const file = join(u.home, ".claude.json");
    const other = join(u.root, "elsewhere");
    const before = `${JSON.stringify(
      {
        numStartups: 3,
        mcpServers: {
          "user-memory": { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"] },
        },
        projects: {
          [u.project]: {
            allowedTools: [],
            mcpServers: {
              "local-inventory": { type: "stdio", command: "node", args: ["dist/server.js"], env: {} },
            },
          },
          [other]: { mcpServers: { "not-this-one": { command: "node", args: ["x.js"] } } },
        },
      },
      null,
      2,
    )}\n`;
    writeFileSync(file, before);
    const wrap = await u.cli(["wrap", "claude-code"]);
    expect(wrap.stderr).toBe("");
    expect(wrap.code).toBe(0);
    const doc: Doc = parseJsonc(read(file));
    expect(doc.mcpServers["user-memory"].args.slice(0, 2)).toEqual([CLI, "run"]);
    const local = doc.projects[u.project].mcpServers["local-inventory"];
    expect(local.args.slice(0, 2)).toEqual([CLI, "run"]);
    expect(local.args.slice(local.args.indexOf("--") + 1)).toEqual(["node", "dist/server.js"]);
    expect(doc.projects[other]).toEqual({
      mcpServers: { "not-this-one": { command: "node", args: ["x.js"] } },
    });
    expect(doc.numStartups).toBe(3);
    // the host rewrites this file all the time: unwrap restores wrap's entries inside the edited file
    writeFileSync(file, read(file).replace('"numStartups": 3', '"numStartups": 4'));
    const unwrap = await u.cli(["unwrap", "claude-code"]);
    expect(unwrap.code).toBe(0);
    expect(read(file)).toBe(before.replace('"numStartups": 3', '"numStartups": 4'));
  });

  it("--dry-run prints the diff and writes nothing", async () => {
    const u = user();
    const before = read(u.files["claude-code"]);
    const r = await u.cli(["wrap", "claude-code", "--dry-run"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^- {7}"command": "node",$/m);
    expect(r.stdout).toContain(`+       "command": ${JSON.stringify(NODE)},`);
    expect(r.stdout).toContain("would wrap inventory-local, docs search");
    expect(read(u.files["claude-code"])).toBe(before);
    expect(existsSync(`${u.files["claude-code"]}.portcullis-backup`)).toBe(false);
    expect(
      existsSync(join(u.stateDir, "wrapped")) && readdirSync(join(u.stateDir, "wrapped")).length,
    ).toBeFalsy();
    // not even the state directory: a dry run writes nothing
    expect(existsSync(u.stateDir)).toBe(false);
  });

  it("unwrap takes none of wrap's options: --dry-run is refused, not an unwrap for real", async () => {
    const u = user();
    const file = u.files["claude-code"];
    expect((await u.cli(["wrap", "claude-code"])).code).toBe(0);
    const wrapped = read(file);
    for (const flag of ["--dry-run", "--servers=inventory-local", "--label=inventory-local=x"]) {
      const r = await u.cli(["unwrap", "claude-code", flag]);
      expect(r.code, flag).toBe(2);
      // named as wrap's, with what unwrap does take: not "unknown option", whose hint (a value
      // starting with '-' goes after '--') sent the user the wrong way
      const dry =
        flag === "--dry-run"
          ? "; it has no dry run: FILE.portcullis-backup, beside the host file, is the file before its first wrap, to compare with"
          : "";
      expect(r.stderr, flag).toBe(
        `portcullis unwrap: ${flag.split("=")[0]} is an option of wrap, not of unwrap (unwrap takes HOST or FILE and --state-dir, and restores every entry wrap recorded for the file${dry}); nothing was written.\n`,
      );
      expect(read(file), flag).toBe(wrapped);
    }
    // and a --servers that names nothing (an unset "$LIST") is refused, not "wrapped nothing"
    const none = await u.cli(["wrap", "codex", "--servers", ""]);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe(
      "portcullis wrap: --servers names no server; give the server keys separated by commas (--servers a,b), or leave it out for every server.\n",
    );
  });

  // The host reads its file with JSON.parse (or a TOML parser), which keeps "__proto__" as an
  // ordinary key and starts that server: wrap must put portcullis in front of it too.
  it('a server keyed "__proto__" is wrapped and unwrapped like any other (JSON and TOML)', async () => {
    const u = user();
    const json = join(u.root, "proto.json");
    writeFileSync(
      json,
      '{"mcpServers":{"a":{"command":"node","args":["a.js"]},"__proto__":{"command":"node","args":["danger.js"]}}}\n',
    );
    const toml = join(u.root, "proto.toml");
    writeFileSync(
      toml,
      '[mcp_servers.a]\ncommand = "node"\n\n[mcp_servers.__proto__]\ncommand = "node"\nargs = ["danger.js"]\n',
    );
    for (const file of [json, toml]) {
      const before = read(file);
      const wrap = await u.cli(["wrap", file]);
      expect(wrap.stderr).toBe("");
      expect(wrap.stdout).toContain(`${file}: wrapped a, __proto__\n`);
      const doc: Doc = file.endsWith(".toml") ? parseToml(read(file)) : JSON.parse(read(file));
      const table = file.endsWith(".toml") ? doc.mcp_servers : doc.mcpServers;
      const entry = Object.getOwnPropertyDescriptor(table, "__proto__")?.value;
      expect(entry.command).toBe(NODE);
      expect(entry.args.slice(-3)).toEqual(["--", "node", "danger.js"]);
      // after a hand edit elsewhere, unwrap restores entry by entry: "__proto__" among them
      writeFileSync(file, `${read(file)}${file.endsWith(".toml") ? "# edited\n" : " "}`);
      const unwrap = await u.cli(["unwrap", file]);
      expect(unwrap.stderr).toBe("");
      expect(unwrap.stdout).toContain("restored a, __proto__");
      // JSON entries are restored as values (jsonc-parser formats them); TOML byte for byte
      if (file.endsWith(".toml")) expect(read(file)).toBe(`${before}# edited\n`);
      else expect(JSON.stringify(JSON.parse(read(file)))).toBe(JSON.stringify(JSON.parse(before)));
    }
  });

  it("--servers wraps only the servers named", async () => {
    const u = user();
    expect((await u.cli(["wrap", "claude-code", "--servers", "docs search"])).code).toBe(0);
    const doc: Doc = parseJsonc(read(u.files["claude-code"]));
    expect(doc.mcpServers["inventory-local"].command).toBe("node");
    expect(doc.mcpServers["docs search"].command).toBe(NODE);
  });

  it("unwrap after the host edited wrapped entries: command and args still as wrap wrote them are restored, other edits kept; changed ones keep their record and say what to do", async () => {
    const u = user();
    const file = u.files["claude-code"];
    await u.cli(["wrap", "claude-code"]);
    const doc: Doc = parseJsonc(read(file));
    doc.mcpServers.added = { command: "python3", args: ["server.py"] };
    // the host adds to the env of one wrapped entry and an argument to the other's
    doc.mcpServers["inventory-local"].env.NEW = "1";
    doc.mcpServers["docs search"].args.push("--verbose");
    writeFileSync(file, JSON.stringify(doc, null, 2));
    const r = await u.cli(["unwrap", "claude-code"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`${file}: restored inventory-local\n`);
    expect(r.stderr).toContain(
      `not restored: "docs search" ("mcpServers") still runs portcullis but the server after its "--" (the command and args portcullis starts) changed since wrap, so unwrap cannot tell what to give back and kept its record: set its "command" to "npx" and set its "args" to ["-y","docs-mcp"] by hand (adding any argument you meant the server to get), then run portcullis unwrap ${file} --state-dir ${u.stateDir} again to clear the record`,
    );
    const back: Doc = parseJsonc(read(file));
    expect(back.mcpServers["inventory-local"]).toEqual({
      command: "node",
      args: ["server.mjs"],
      env: { LOG_LEVEL: "debug", NEW: "1" },
    });
    expect(back.mcpServers.added).toEqual({ command: "python3", args: ["server.py"] });
    expect(back.mcpServers["docs search"].command).toBe(NODE);
    // the record of the entry not restored is kept: doctor does not call it bare or unrecorded
    const report = JSON.parse((await u.cli(["doctor", "--json"])).stdout);
    expect(report.findings.map((f: { what: string }) => f.what).join("\n")).not.toMatch(
      /no wrap record|docs search/,
    );

    // following the sentence: set them by hand, unwrap again; the record goes
    back.mcpServers["docs search"].command = "npx";
    back.mcpServers["docs search"].args = ["-y", "docs-mcp", "--verbose"];
    writeFileSync(file, JSON.stringify(back, null, 2));
    const again = await u.cli(["unwrap", "claude-code"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("nothing to restore: docs search (it no longer runs portcullis)");
    expect((await u.cli(["unwrap", "claude-code"])).stderr).toMatch(/was not wrapped by portcullis/);
  });
});

describe("temporary files a killed wrap left", () => {
  it("the next write removes those of a process that is gone, and keeps a recent one and a live process's", async () => {
    const u = user();
    const file = u.files["claude-code"];
    const original = read(file);
    // pids of processes that have ended
    const gone = [1, 2].map(() => spawnSync(NODE, ["-e", "0"]).pid!);
    // as writeAtomic names them: `..mcp.json.portcullis-PID-STAMP.tmp` beside `.mcp.json`
    const temp = (pid: number) =>
      join(dirname(file), `.${basename(file)}.portcullis-${pid}-${writerStamp(pid) ?? "0123456789ab"}.tmp`);
    const hourAgo = new Date(Date.now() - 3_600_000);
    const stale = temp(gone[0]!);
    const recent = temp(gone[1]!);
    const live = temp(process.pid);
    for (const t of [stale, recent, live]) writeFileSync(t, "half a file");
    utimesSync(stale, hourAgo, hourAgo);
    utimesSync(live, hourAgo, hourAgo);
    const r = await u.cli(["wrap", file]);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(stale)).toBe(false);
    // a write in progress elsewhere (another PID namespace) or of a running portcullis is not touched
    expect(existsSync(recent)).toBe(true);
    expect(existsSync(live)).toBe(true);
    expect(read(`${file}.portcullis-backup`)).toBe(original);
    expect((await u.cli(["unwrap", file])).code).toBe(0);
    expect(read(file)).toBe(original);
  });

  it("an old one whose pid another process has taken since is removed; a young one of that pid is kept", async () => {
    const u = user();
    const file = u.files["claude-code"];
    // the process the killed wrap's pid names now: alive, but not its writer
    const other = spawn("sleep", ["60"], { stdio: "ignore" });
    try {
      const pid = other.pid!;
      const name = (writer: string) => join(dirname(file), `.${basename(file)}.portcullis-${writer}.tmp`);
      // written by an earlier portcullis (the pid alone), and by a process of another start time
      const unstamped = name(`${pid}`);
      const otherStart = name(`${pid}-0123456789ab`);
      const young = name(`${pid}-ba9876543210`);
      for (const t of [unstamped, otherStart, young]) writeFileSync(t, "a copy of the host file");
      const hourAgo = new Date(Date.now() - 3_600_000);
      utimesSync(unstamped, hourAgo, hourAgo);
      utimesSync(otherStart, hourAgo, hourAgo);
      const r = await u.cli(["wrap", file]);
      expect(r.code, r.stderr).toBe(0);
      expect(existsSync(unstamped)).toBe(false);
      expect(existsSync(otherStart)).toBe(false);
      expect(existsSync(young)).toBe(true);
      expect(other.exitCode).toBeNull(); // the process that has the pid now was never touched
    } finally {
      other.kill("SIGKILL");
    }
  });
});

describe("bad input: one sentence, nothing written", () => {
  async function refused(u: FakeUser, args: string[], file: string, pattern: RegExp) {
    const before = read(file);
    // "nothing was written": a state directory not there before is not made by a refusal either
    const hadState = existsSync(u.stateDir);
    const r = await u.cli(args);
    expect(existsSync(u.stateDir)).toBe(hadState);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr.trim()).toMatch(pattern);
    expect(r.stderr).toContain(file);
    expect(read(file)).toBe(before);
    expect(r.stdout).toBe("");
  }

  it("a JSON file that does not parse", async () => {
    const u = user();
    const file = join(u.root, "broken.json");
    writeFileSync(file, read(join(import.meta.dirname, "../fixtures/hosts/broken/.mcp.json")));
    await refused(
      u,
      ["wrap", file],
      file,
      /does not parse \(line \d+, column \d+: .+\); nothing was written\.$/,
    );
    expect(existsSync(`${file}.portcullis-backup`)).toBe(false);
  });

  it("a file nested too deep for a recursive parser (JSON and TOML)", async () => {
    const u = user();
    const depth = 100_000;
    const json = join(u.root, "deep.json");
    writeFileSync(
      json,
      `{"mcpServers":{"a":{"command":"node","args":${"[".repeat(depth)}${"]".repeat(depth)}}}}\n`,
    );
    await refused(u, ["wrap", json], json, /is nested too deep to read; nothing was written\.$/);
    const toml = join(u.root, "deep.toml");
    writeFileSync(
      toml,
      `[mcp_servers.a]\ncommand = "node"\nargs = ${"[".repeat(depth)}${"]".repeat(depth)}\n`,
    );
    await refused(u, ["wrap", toml], toml, /nothing was written\.$/);
  });

  it("a TOML file that does not parse", async () => {
    const u = user();
    const file = join(u.root, "config.toml");
    writeFileSync(file, read(join(import.meta.dirname, "../fixtures/hosts/broken/config.toml")));
    await refused(u, ["wrap", file], file, /is not valid TOML .*; nothing was written\.$/);
  });

  it("a file already wrapped: a second wrap leaves it as it is, exit 0, and names the unwrap of that file", async () => {
    const u = user();
    const codex = u.files.codex;
    const claude = u.files["claude-code"];
    const original = read(codex);
    expect((await u.cli(["wrap", "claude-code"])).code).toBe(0);
    expect((await u.cli(["wrap", "codex"])).code).toBe(0);
    const wrappedClaude = read(claude);
    const wrappedCodex = read(codex);
    const r = await u.cli(["wrap", "codex"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`${codex}: wrapped nothing\n`);
    expect(read(codex)).toBe(wrappedCodex);
    // the backup is still the file before its first wrap
    expect(read(`${codex}.portcullis-backup`)).toBe(original);
    const hint = /left alone: inventory \(already wrapped; undo with portcullis (unwrap [^)]+)\)/.exec(
      r.stdout,
    );
    expect(hint?.[1]).toBe(`unwrap ${codex} --state-dir ${u.stateDir}`);
    // follow the hint word for word
    const undo = await u.cli(hint![1]!.split(" "));
    expect(undo.code).toBe(0);
    expect(read(codex)).toBe(original);
    expect(read(claude)).toBe(wrappedClaude);
  });

  it("a file already wrapped with --state-dir: the unwrap it names carries the same state directory", async () => {
    const u = user();
    const dir = join(u.root, "other state");
    const codex = u.files.codex;
    const original = read(codex);
    const first = await u.cli(["wrap", "codex", "--state-dir", dir]);
    expect(first.code).toBe(0);
    // the init it asks for makes that directory's keyring, not the default directory's
    expect(first.stdout).toContain(
      `no keyring in ${dir} yet: before the host starts these servers, run: portcullis init --state-dir '${dir}'\n`,
    );
    const r = await u.cli(["wrap", "codex", "--state-dir", dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`already wrapped; undo with portcullis unwrap ${codex} --state-dir '${dir}')`);
    expect((await u.cli(["unwrap", codex, "--state-dir", dir])).code).toBe(0);
    expect(read(codex)).toBe(original);
  });

  it("an entry already wrapped (by hand) named with --servers", async () => {
    const u = user();
    const file = u.files["claude-code"];
    const doc: Doc = parseJsonc(read(file));
    doc.mcpServers.manual = { command: "portcullis", args: ["run", "--", "node", "x.js"] };
    writeFileSync(file, JSON.stringify(doc, null, 2));
    await refused(
      u,
      ["wrap", "claude-code", "--servers", "manual"],
      file,
      /server "manual" is already wrapped \(leave it out of --servers\); nothing was written\./,
    );
    // wrapped by wrap: the unwrap that undoes it is named too
    expect((await u.cli(["wrap", "claude-code", "--servers", "inventory-local"])).code).toBe(0);
    await refused(
      u,
      ["wrap", "claude-code", "--servers", "inventory-local"],
      file,
      new RegExp(
        `server "inventory-local" is already wrapped \\(leave it out of --servers; undo with portcullis unwrap ${file} --state-dir ${u.stateDir}\\); nothing was written\\.`,
      ),
    );
  });

  it("a name collision: two keys that make the same label", async () => {
    const u = user();
    const file = u.files["claude-code"];
    const doc: Doc = parseJsonc(read(file));
    doc.mcpServers["inventory local"] = { command: "node", args: ["other.mjs"] };
    writeFileSync(file, JSON.stringify(doc, null, 2));
    await refused(
      u,
      ["wrap", "claude-code"],
      file,
      /would take the label "inventory-local", already used by .* --label 'inventory local=inventory-local-2'/,
    );
  });

  it("a name collision with a label wrapped in another host's file", async () => {
    const u = user();
    expect((await u.cli(["wrap", "cursor"])).code).toBe(0);
    // codex also has a server named "inventory"
    // with another cwd and env it is another server: the refusal names the way out
    await refused(
      u,
      ["wrap", "codex"],
      u.files.codex,
      /label "inventory", already used by .*cursor.* for another server .*--label inventory=inventory-2;/,
    );
    const r = await u.cli(["wrap", "codex", "--label", "inventory=inventory-2"]);
    expect(r.code, r.stderr).toBe(0);
    const doc: Doc = parseToml(read(u.files.codex));
    expect(doc.mcp_servers.inventory.args).toContain("inventory-2");
  });

  it("--label giving one server two labels: which was meant is not guessed", async () => {
    const u = user();
    const file = u.files.codex;
    const before = read(file);
    const r = await u.cli(["wrap", "codex", "--label", "inventory=inv-a", "--label", "inventory=inv-b"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'portcullis wrap: --label gives the server "inventory" two labels (inv-a and inv-b); give one.\n',
    );
    expect(r.stdout).toBe("");
    expect(read(file)).toBe(before);
    expect(existsSync(u.stateDir)).toBe(false);
    // the same label twice is one label
    const same = await u.cli(["wrap", "codex", "--label", "inventory=inv-a", "--label", "inventory=inv-a"]);
    expect(same.code, same.stderr).toBe(0);
    expect(parseToml(read(file)).mcp_servers).toMatchObject({
      inventory: { args: expect.arrayContaining(["inv-a"]) },
    });
  });

  it("a --servers key the file does not have", async () => {
    const u = user();
    await refused(
      u,
      ["wrap", "claude-code", "--servers", "nope"],
      u.files["claude-code"],
      /has no server "nope"/,
    );
  });

  it("a --servers key found only on Object.prototype", async () => {
    const u = user();
    for (const key of ["constructor", "toString", "__proto__"])
      await refused(
        u,
        ["wrap", "claude-code", "--servers", key, "--dry-run"],
        u.files["claude-code"],
        new RegExp(`has no server "${key}"`),
      );
  });

  it("a damaged wrap record: unwrap and wrap name it and say how to recover", async () => {
    const u = user();
    const file = u.files["claude-code"];
    expect((await u.cli(["wrap", "claude-code"])).code).toBe(0);
    const dir = join(u.stateDir, "wrapped");
    const [name] = readdirSync(dir);
    const record = join(dir, name!);
    writeFileSync(record, '{"format":"portcullis-wrap/1","file":');
    for (const command of ["unwrap", "wrap"]) {
      await refused(
        u,
        [command, "claude-code"],
        file,
        /the wrap record .* is damaged \(it is not JSON\).*portcullis-backup holds it as it was before wrap.*then delete .*; nothing was written\.$/,
      );
      const r = await u.cli([command, "claude-code"]);
      expect(r.stderr).toContain(record);
      expect(r.stderr).not.toMatch(/internal error|SyntaxError/i);
    }
    // another host's wrap reads every record (labels must not collide): it names the damaged one
    await refused(u, ["wrap", "cursor"], u.files.cursor, /the wrap record .* is damaged/);
  });

  it("a read-only file", async () => {
    const u = user();
    chmodSync(u.files.vscode, 0o444);
    await refused(u, ["wrap", "vscode"], u.files.vscode, /is read-only; nothing was written\.$/);
    expect(existsSync(`${u.files.vscode}.portcullis-backup`)).toBe(false);
  });
});

describe("a wrapped Claude Code entry, started the way the host starts it", () => {
  it("in a bare environment and another working directory, reaches the state directory wrap named", async () => {
    const u = user();
    writeFileSync(
      u.files["claude-code"],
      JSON.stringify({ mcpServers: { "echo-local": { command: NODE, args: [FIXTURES.echo] } } }, null, 2),
    );
    mkdirSync(u.stateDir, { recursive: true, mode: 0o700 });
    copyFileSync(join(newStateDir(), "keyring.json"), join(u.stateDir, "keyring.json"));
    expect((await u.cli(["wrap", "claude-code"])).code).toBe(0);
    const entry: Doc = parseJsonc(read(u.files["claude-code"])).mcpServers["echo-local"];
    const elsewhere = tempDir("portcullis-elsewhere-");
    // No PATH, no HOME, no PORTCULLIS_HOME: only what the entry itself carries (and the test
    // suite's digest cache, so nothing lands in the real user's cache).
    const child = spawn(entry.command, entry.args, {
      cwd: elsewhere,
      env: { ...(entry.env ?? {}), PORTCULLIS_CACHE_DIR: join(u.root, "cache") },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    try {
      child.stdin.write(
        `${JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: {
            protocolVersion: "2025-11-25",
            capabilities: {},
            clientInfo: { name: "host", version: "1" },
          },
        })}\n`,
      );
      await waitFor(() => out.includes('"id":1') || child.exitCode !== null, 20_000, "the initialize answer");
      expect(out, `stderr:\n${err}`).toContain('"id":1');
      expect(JSON.parse(out.split("\n")[0]!).result.serverInfo).toBeDefined();
      const store = openStore(u.stateDir);
      try {
        expect(listGateways(store).map((g) => g.serverLabel)).toContain("echo-local");
      } finally {
        store.close();
      }
    } finally {
      child.kill();
      removeDir(elsewhere);
    }
  });
});
