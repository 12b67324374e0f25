// Host files and wrap records left by a portcullis that wrote "portcullis-wrap/1" records
// (test/fixtures/wrap-v1, made by that build: see make.sh there): this build's unwrap, doctor
// and wrap carry them over. The real CLI in a fake home directory.
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parse as parseJsonc } from "jsonc-parser";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { CLI, NODE, REPO } from "../helpers/paths.js";
import { read, UNWRAP_NEXT } from "./hosts.js";

const FIXTURE = join(REPO, "test", "fixtures", "wrap-v1");
const HOSTS = join(REPO, "test", "fixtures", "hosts");
/** The root, CLI and node the fixture's files name, as they were when the old build made them. */
const MADE = JSON.parse(read(join(FIXTURE, "paths.json"))) as { root: string; cli: string; node: string };

// biome-ignore lint/suspicious/noExplicitAny: host documents are checked loosely
type Doc = any;

interface OldUser {
  root: string;
  home: string;
  project: string;
  project2: string;
  stateDir: string;
  claude: string;
  mcp: string;
  vscode: string;
  codex: string;
  /** the wrap record of a host file, as it is on disk now (null when there is none) */
  record(file: string): Doc | null;
  cli(args: string[], cwd?: string): ReturnType<typeof runCli>;
}

/** The name both formats give a host file's record: 24 hex digits of the SHA-256 of its path. */
const recordName = (file: string) => `${createHash("sha256").update(file).digest("hex").slice(0, 24)}.json`;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name));
}

const users: string[] = [];
afterEach(() => {
  for (const root of users.splice(0)) removeDir(root);
});

/**
 * The fixture copied under a new root, every path it names moved there (and to this CLI and
 * node), as if the old build had wrapped this user's files: each record under the name of its
 * host file's new path.
 */
function oldUser(): OldUser {
  const root = tempDir("portcullis-wrap-v1-");
  users.push(root);
  const move = (text: string) =>
    text.replaceAll(MADE.cli, CLI).replaceAll(MADE.root, root).replaceAll(MADE.node, NODE);
  for (const top of ["home", "project", "state"])
    for (const from of files(join(FIXTURE, top))) {
      const text = move(readFileSync(from, "utf8"));
      let to = join(root, relative(FIXTURE, from));
      if (top === "state") to = join(root, "state", "wrapped", recordName(JSON.parse(text).file));
      mkdirSync(join(to, ".."), { recursive: true });
      writeFileSync(to, text);
    }
  mkdirSync(join(root, "project2"));
  const stateDir = join(root, "state");
  chmodSync(stateDir, 0o700);
  chmodSync(join(stateDir, "wrapped"), 0o700);
  const home = join(root, "home");
  const env = {
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    APPDATA: join(home, "AppData"),
    CODEX_HOME: join(home, ".codex"),
    PORTCULLIS_HOME: stateDir,
  };
  const project = join(root, "project");
  const recordPath = (file: string) => join(stateDir, "wrapped", recordName(file));
  return {
    root,
    home,
    project,
    project2: join(root, "project2"),
    stateDir,
    claude: join(home, ".claude.json"),
    mcp: join(project, ".mcp.json"),
    vscode: join(project, ".vscode", "mcp.json"),
    codex: join(home, ".codex", "config.toml"),
    record: (file) => {
      try {
        return JSON.parse(read(recordPath(file)));
      } catch {
        return null;
      }
    },
    cli: (args, cwd = project) => runCli(args, { env, cwd }),
  };
}

/** The file before the old build wrapped it: its backup, which that build wrote. */
const backup = (file: string) => read(`${file}.portcullis-backup`);

describe("records an earlier portcullis wrote (portcullis-wrap/1)", () => {
  it("the fixture is what the old build left: wrapped files, their backups and v1 records", () => {
    const u = oldUser();
    for (const f of [u.claude, u.mcp, u.vscode, u.codex]) {
      expect(u.record(f)?.format).toBe("portcullis-wrap/1");
      expect(u.record(f)?.wrappedText).toBe(read(f));
      expect(u.record(f)?.originalText).toBe(backup(f));
    }
    expect(backup(u.mcp)).toBe(read(join(HOSTS, "claude-code", ".mcp.json")));
    expect(backup(u.vscode)).toBe(read(join(HOSTS, "vscode", "mcp.json")));
    expect(backup(u.codex)).toBe(read(join(HOSTS, "codex", "config.toml")));
  });

  it("unwrap gives back every file byte for byte, as the old build's unwrap would", async () => {
    const u = oldUser();
    const before = [u.claude, u.mcp, u.vscode, u.codex].map(backup);
    const claude = await u.cli(["unwrap", "claude-code"]);
    expect(claude.code, claude.stderr).toBe(0);
    expect(claude.stdout).toBe(
      `${u.mcp}: restored byte for byte\n${u.claude}: restored byte for byte\n${UNWRAP_NEXT}`,
    );
    for (const host of ["vscode", "codex"]) {
      const r = await u.cli(["unwrap", host]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("restored byte for byte\n");
    }
    expect([u.claude, u.mcp, u.vscode, u.codex].map(read)).toEqual(before);
    expect(readdirSync(join(u.stateDir, "wrapped"))).toEqual([]);
  });

  it("a file edited since: unwrap restores each entry in its own table (the project's, the user's)", async () => {
    const u = oldUser();
    writeFileSync(u.claude, read(u.claude).replace('"numStartups": 42', '"numStartups": 43'));
    const r = await u.cli(["unwrap", "claude-code"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`${u.claude}: restored inventory-db, notes\n`);
    const doc: Doc = parseJsonc(read(u.claude));
    expect(doc.numStartups).toBe(43);
    expect(doc.projects[u.project].mcpServers["inventory-db"]).toEqual({
      type: "stdio",
      command: "node",
      args: ["db.js"],
      env: { DB: "dev" },
    });
    expect(doc.mcpServers.notes).toEqual({ command: "npx", args: ["-y", "notes-mcp"] });
    expect(u.record(u.claude)).toBeNull();
  });

  it("doctor sees them recorded and advises adding to them; reading leaves the record as it is", async () => {
    const u = oldUser();
    const records = readdirSync(join(u.stateDir, "wrapped")).map((n) => join(u.stateDir, "wrapped", n));
    const bytes = records.map((p) => read(p));
    const report = JSON.parse((await u.cli(["doctor", "--json"])).stdout);
    const about = (file: string) =>
      report.findings.filter((f: { what: string }) => f.what.startsWith(`${file}`));
    expect(report.findings.filter((f: { what: string }) => f.what.includes("no wrap record"))).toEqual([]);
    expect(about(u.codex)).toEqual([
      {
        ok: true,
        what: `${u.codex}: not behind portcullis: docs`,
        next: `portcullis wrap codex --servers docs --state-dir ${u.stateDir}`,
      },
    ]);
    expect(about(u.claude)).toEqual([]);
    const hosts = (file: string) => report.hosts.find((h: { file: string }) => h.file === file).servers;
    expect(hosts(u.claude)).toEqual([
      { key: "inventory-db", wrapped: true, kind: "stdio" },
      { key: "notes", wrapped: true, kind: "stdio" },
    ]);
    // from the other project: its server is the one not behind portcullis yet
    const other = JSON.parse((await u.cli(["doctor", "--json"], u.project2)).stdout);
    expect(other.findings.filter((f: { what: string }) => f.what.startsWith(u.claude))).toEqual([
      {
        ok: true,
        what: `${u.claude}: not behind portcullis: reports`,
        next: `portcullis wrap claude-code --servers reports --state-dir ${u.stateDir}`,
      },
    ]);
    expect(records.map((p) => read(p))).toEqual(bytes);
  });

  it("wrap adds servers to a file the old build wrapped, writes the record anew, and unwrap still gives back the bytes before the old wrap", async () => {
    const u = oldUser();
    const codexBefore = backup(u.codex);
    const codex = await u.cli(["wrap", "codex"]);
    expect(codex.code, codex.stderr).toBe(0);
    expect(codex.stdout).toContain(`${u.codex}: wrapped docs\n`);
    expect(codex.stdout).toContain(
      `left alone: inventory (already wrapped; undo with portcullis unwrap ${u.codex} --state-dir ${u.stateDir})`,
    );
    expect(u.record(u.codex)).toMatchObject({ format: "portcullis-wrap/2", originalText: codexBefore });
    expect(Object.keys(u.record(u.codex).entries)).toEqual([
      '["mcp_servers","inventory"]',
      '["mcp_servers","docs"]',
    ]);
    expect(backup(u.codex)).toBe(codexBefore);
    const undo = await u.cli(["unwrap", "codex"]);
    expect(undo.code, undo.stderr).toBe(0);
    expect(undo.stdout).toBe(`${u.codex}: restored byte for byte\n${UNWRAP_NEXT}`);
    expect(read(u.codex)).toBe(codexBefore);

    // ~/.claude.json, from the other project: doctor's advice, as given
    const claudeBefore = backup(u.claude);
    const reports = await u.cli(["wrap", "claude-code", "--servers", "reports"], u.project2);
    expect(reports.code, reports.stderr).toBe(0);
    expect(reports.stdout).toContain(`${u.claude}: wrapped reports\n`);
    const doc: Doc = parseJsonc(read(u.claude));
    expect(doc.projects[u.project2].mcpServers.reports.args).toEqual([
      CLI,
      "run",
      "--state-dir",
      u.stateDir,
      "--label",
      "reports",
      "--",
      "node",
      "reports.js",
    ]);
    expect(u.record(u.claude).format).toBe("portcullis-wrap/2");
    const all = await u.cli(["unwrap", u.claude], u.project2);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toBe(`${u.claude}: restored byte for byte\n${UNWRAP_NEXT}`);
    expect(read(u.claude)).toBe(claudeBefore);
  });

  it("a v1 record whose entry is not in the file as that wrap wrote it is refused as damaged, naming the entry", async () => {
    const u = oldUser();
    const record = join(u.stateDir, "wrapped", recordName(u.vscode));
    writeFileSync(record, read(record).replace('"memory": {\n      "label"', '"nope": {\n      "label"'));
    const before = read(u.vscode);
    const r = await u.cli(["unwrap", "vscode"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `the wrap record ${record} is damaged (the entry "nope" is not in the file as wrap wrote it)`,
    );
    expect(read(u.vscode)).toBe(before);
  });
});
