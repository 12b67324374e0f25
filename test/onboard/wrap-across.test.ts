// wrap across files and projects: Claude Code's ~/.claude.json wrapped from several projects,
// --servers over a host's files, one server configured in several hosts. The real CLI in a fake
// home directory.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseJsonc } from "jsonc-parser";
import { parse as parseToml } from "smol-toml";
import { describe, expect, it } from "vitest";
import { CLI } from "../helpers/paths.js";
import { fakeUsersOfEachTest, read, UNWRAP_NEXT } from "./hosts.js";

const user = fakeUsersOfEachTest();

// biome-ignore lint/suspicious/noExplicitAny: host documents are checked loosely
type Doc = any;

const labelOf = (e: { args: string[] }) => e.args[e.args.indexOf("--label") + 1];
const isWrapped = (e: { args?: string[] }) => e.args?.[0] === CLI;

describe("~/.claude.json, wrapped from each project", () => {
  it("a second project's wrap wraps its own servers; doctor's advice is true; unwrap from a project restores that project's and the user's", async () => {
    const u = user();
    const file = join(u.home, ".claude.json");
    const p1 = u.project;
    const p2 = join(u.root, "project2");
    mkdirSync(p2);
    rmSync(u.files["claude-code"]); // this project keeps its servers in ~/.claude.json only
    const before = `${JSON.stringify(
      {
        numStartups: 42,
        mcpServers: {
          memory: { type: "stdio", command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"] },
          "inventory-local": { command: "node", args: ["/opt/old/inventory.js"] },
        },
        projects: {
          [p1]: { mcpServers: { "inventory-local": { command: "node", args: ["dist/server.js"] } } },
          [p2]: { mcpServers: { reports: { command: "node", args: ["server.js"] } } },
        },
      },
      null,
      2,
    )}\n`;
    writeFileSync(file, before);

    const first = await u.cli(["wrap", "claude-code", "--servers", "memory,inventory-local"], p1);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(`${file}: wrapped inventory-local, memory\n`);
    // the user's entry of the same name is not run in this project: said, not wrapped
    expect(first.stdout).toContain(
      `left alone: inventory-local (the entry in "mcpServers" is not run here: the one of the same name in "projects" → ${JSON.stringify(p1)} → "mcpServers" shadows it)`,
    );

    // from the second project: doctor names the bare server, and its advice works as given
    const report = JSON.parse((await u.cli(["doctor", "--json"], p2)).stdout);
    const advice = report.findings.find((f: { what: string }) => f.what.startsWith(`${file}: `));
    // the user's inventory-local is another server than the first project's, which has its label
    expect(advice).toEqual({
      ok: true,
      what: `${file}: not behind portcullis: reports, inventory-local; "inventory-local" is given the label "inventory-local-2": its own, "inventory-local", is another server's already (${file} (inventory-local))`,
      next: `portcullis wrap claude-code --servers reports,inventory-local --label inventory-local=inventory-local-2 --state-dir ${u.stateDir}`,
    });
    const refused = await u.cli(["wrap", "claude-code", "--servers", "reports,inventory-local"], p2);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("--label inventory-local=inventory-local-2; nothing was written.");
    const second = await u.cli(advice.next.split(" ").slice(1), p2);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain(`${file}: wrapped reports, inventory-local\n`);
    let doc: Doc = parseJsonc(read(file));
    expect(labelOf(doc.projects[p2].mcpServers.reports)).toBe("reports");
    expect(labelOf(doc.mcpServers["inventory-local"])).toBe("inventory-local-2");
    expect(labelOf(doc.projects[p1].mcpServers["inventory-local"])).toBe("inventory-local");
    expect(labelOf(doc.mcpServers.memory)).toBe("memory");
    const after = JSON.parse((await u.cli(["doctor", "--json"], p2)).stdout);
    expect(after.findings.filter((f: { what: string }) => f.what.startsWith(`${file}: `))).toEqual([]);
    const again = await u.cli(["wrap", "claude-code"], p2);
    expect(again.stdout).toContain(`${file}: wrapped nothing\n`);
    expect(again.stdout).toContain(
      `left alone: memory (already wrapped; undo with portcullis unwrap ${file} --state-dir ${u.stateDir})`,
    );

    // unwrap from the second project: its own server and the user's; the first project's stays
    doc.numStartups = 43; // the host rewrites the file meanwhile
    writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
    const undo2 = await u.cli(["unwrap", "claude-code"], p2);
    expect(undo2.code, undo2.stderr).toBe(0);
    expect(undo2.stdout).toContain(
      `still wrapped, from another project: inventory-local ("projects" → ${JSON.stringify(p1)} → "mcpServers")`,
    );
    doc = parseJsonc(read(file));
    expect(doc.projects[p2].mcpServers.reports).toEqual({ command: "node", args: ["server.js"] });
    expect(doc.mcpServers.memory.command).toBe("npx");
    expect(isWrapped(doc.projects[p1].mcpServers["inventory-local"])).toBe(true);
    // unwrap of the file by path: everything left, every project
    const undoAll = await u.cli(["unwrap", file], p2);
    expect(undoAll.code, undoAll.stderr).toBe(0);
    expect(read(file)).toBe(before.replace('"numStartups": 42', '"numStartups": 43'));
  });
});

describe("--servers over a host's files", () => {
  it("a name needs to be in one of Claude Code's files, not in each; only a name in none is refused", async () => {
    const u = user();
    const mcp = u.files["claude-code"]; // the project's .mcp.json, without "memory"
    const file = join(u.home, ".claude.json");
    const before = `${JSON.stringify({ mcpServers: { memory: { command: "npx", args: ["-y", "server-memory"] } } }, null, 2)}\n`;
    writeFileSync(file, before);
    const mcpBefore = read(mcp);
    const r = await u.cli(["wrap", "claude-code", "--servers", "memory"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`${mcp}: wrapped nothing\n`);
    expect(r.stdout).toContain(`${file}: wrapped memory\n`);
    expect(read(mcp)).toBe(mcpBefore);

    const nope = await u.cli(["wrap", "claude-code", "--servers", "memory,nope"]);
    expect(nope.code).toBe(2);
    expect(nope.stderr.trim()).toBe(
      `portcullis wrap: none of ${mcp}, ${file} has a server "nope" (--servers; the servers there: "inventory-local", "docs search", "remote", "memory"); nothing was written.`,
    );
    // unwrap of the host: the file never wrapped is passed over, the other restored
    const undo = await u.cli(["unwrap", "claude-code"]);
    expect(undo.code, undo.stderr).toBe(0);
    expect(undo.stdout).toBe(`${file}: restored byte for byte\n${UNWRAP_NEXT}`);
    expect(read(file)).toBe(before);
  });
});

describe("one server in several hosts", () => {
  it("the same command, args, cwd and env is one server: each host's entry is wrapped under the same label", async () => {
    const u = user();
    const entry = { command: "node", args: ["dist/server.js"], cwd: "/srv/inventory" };
    writeFileSync(u.files.cursor, JSON.stringify({ mcpServers: { inventory: entry } }, null, 2));
    writeFileSync(u.files.vscode, JSON.stringify({ servers: { inventory: entry } }, null, 2));
    writeFileSync(u.files["claude-desktop"], JSON.stringify({ mcpServers: { inventory: entry } }, null, 2));
    writeFileSync(
      u.files.codex,
      '[mcp_servers.inventory]\ncommand = "node"\nargs = ["dist/server.js"]\ncwd = "/srv/inventory"\n',
    );
    for (const host of ["cursor", "vscode", "claude-desktop", "codex"]) {
      const dry = await u.cli(["wrap", host, "--dry-run"]);
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain("would wrap inventory");
      const r = await u.cli(["wrap", host]);
      expect(r.code, `${host}: ${r.stderr}`).toBe(0);
    }
    for (const f of [u.files.cursor, u.files["claude-desktop"]])
      expect(labelOf(parseJsonc(read(f)).mcpServers.inventory)).toBe("inventory");
    expect(labelOf(parseJsonc(read(u.files.vscode)).servers.inventory)).toBe("inventory");
    expect(labelOf((parseToml(read(u.files.codex)) as Doc).mcp_servers.inventory)).toBe("inventory");
  });
});
