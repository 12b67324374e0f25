// After a rebuild under `onChange report` the gateway's status line tells the user to add
// `--on-change restart` to a wrapped entry's args, before the '--' (docs/onboarding.md says the
// same). unwrap then refused that entry (exit 1, a manual restore step): its args were no longer
// exactly what wrap wrote. An entry whose only edits are run's own options, and which still starts
// exactly the recorded server after the '--', is restored, and the options dropped are named.
// Anything else after the '--', or an entry that no longer starts portcullis's run, is still
// refused. Real CLI, in a fake home, JSON and Codex TOML (each written back by its own editor).
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseJsonc } from "jsonc-parser";
import { describe, expect, it } from "vitest";
import { NODE } from "../helpers/paths.js";
import { type FakeUser, fakeUsersOfEachTest, read, UNWRAP_NEXT } from "./hosts.js";

const user = fakeUsersOfEachTest();

// biome-ignore lint/suspicious/noExplicitAny: host documents are checked loosely
type Doc = any;

/** Wrap claude-code's .mcp.json, then let `edit` change the "docs search" entry as the user would. */
async function wrappedThenEdited(u: FakeUser, edit: (entry: Doc) => void): Promise<string> {
  const file = u.files["claude-code"];
  const wrap = await u.cli(["wrap", "claude-code"]);
  expect(wrap.code, wrap.stderr).toBe(0);
  const doc: Doc = parseJsonc(read(file));
  edit(doc.mcpServers["docs search"]);
  writeFileSync(file, JSON.stringify(doc, null, 2));
  return file;
}

/** Insert words into a wrapped entry's args just before its '--'. */
function beforeSeparator(args: string[], ...words: string[]): void {
  args.splice(args.indexOf("--"), 0, ...words);
}

const records = (u: FakeUser) => readdirSync(join(u.stateDir, "wrapped"));

describe("unwrap of an entry whose run options were edited as the status line advises", () => {
  it("JSON: --on-change restart and --approval per-call added before '--' (and an env added): the original command and args come back, the env stays, the options are named", async () => {
    const u = user();
    const file = await wrappedThenEdited(u, (e) => {
      beforeSeparator(e.args, "--on-change", "restart", "--approval=per-call");
      e.env = { DOCS_TOKEN_FILE: "/run/docs" };
    });
    const r = await u.cli(["unwrap", "claude-code"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      `${file}: restored inventory-local, docs search\n` +
        "  docs search: dropped with the wrap, the run options added since: --on-change restart, --approval per-call\n" +
        UNWRAP_NEXT,
    );
    const back: Doc = parseJsonc(read(file));
    expect(back.mcpServers["docs search"]).toEqual({
      type: "stdio",
      command: "npx",
      args: ["-y", "docs-mcp"],
      env: { DOCS_TOKEN_FILE: "/run/docs" },
    });
    expect(back.mcpServers["inventory-local"]).toEqual({
      command: "node",
      args: ["server.mjs"],
      env: { LOG_LEVEL: "debug" },
    });
    // nothing left to undo: the record is gone
    expect(records(u)).toEqual([]);
  });

  it("JSON: an option wrap wrote changed (--label) or removed (--state-dir) is restored too; only what was added or changed is named, a --header's value never", async () => {
    const u = user();
    const token = "sk-live-Zq9x8w7v6u5t4s3r2q1p";
    const file = await wrappedThenEdited(u, (e) => {
      const args: string[] = e.args;
      args[args.indexOf("--label") + 1] = "docs";
      args.splice(args.indexOf("--state-dir"), 2);
      beforeSeparator(args, "--header", `Authorization: Bearer ${token}`);
    });
    const r = await u.cli(["unwrap", "claude-code"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      "  docs search: dropped with the wrap, the run options added since: --label docs, --header (value not shown)\n",
    );
    expect(r.stdout + r.stderr).not.toContain(token.slice(0, 12));
    expect(parseJsonc(read(file)).mcpServers["docs search"].args).toEqual(["-y", "docs-mcp"]);
  });

  it("JSON: anything else changed is still refused, the record kept: an argument after '--', another node with the server changed, an option run does not take, a word before '--'", async () => {
    // each with the part unwrap's refusal names as changed
    const SERVER = `the server after its "--" (the command and args portcullis starts)`;
    const OPTIONS = `run's options before its "--" (not only options run takes, each once)`;
    const edits: [string, (e: Doc) => void, string][] = [
      [
        "an argument after '--' changed, beside an added run option",
        (e) => {
          beforeSeparator(e.args, "--on-change", "restart");
          e.args[e.args.length - 1] = "docs-mcp@2";
        },
        SERVER,
      ],
      ["an argument added after '--'", (e) => e.args.push("--verbose"), SERVER],
      // (another node or CLI alone is restored: test/onboard/unwrap-launcher-moved.test.ts)
      [
        "another node and an argument after '--' removed",
        (e) => {
          e.command = "/usr/bin/node-other";
          e.args.pop();
        },
        `its "command" (the node wrap wrote) and ${SERVER}`,
      ],
      ["an option run does not take", (e) => beforeSeparator(e.args, "--on-chnage", "restart"), OPTIONS],
      ["a word that is no option (a LABEL) before '--'", (e) => beforeSeparator(e.args, "docs"), OPTIONS],
      // run's first '--' ends its options: the server it would start is "npx -- npx -y docs-mcp"
      ["a second '--' inserted before the original one", (e) => beforeSeparator(e.args, "--", "npx"), SERVER],
      [
        "the '--' removed",
        (e) => e.args.splice(e.args.indexOf("--"), 1),
        `its "args" (no "run" with a "--" before the server any more)`,
      ],
    ];
    for (const [what, edit, part] of edits) {
      const u = user();
      const file = await wrappedThenEdited(u, edit);
      const edited = parseJsonc(read(file)).mcpServers["docs search"];
      const r = await u.cli(["unwrap", "claude-code"]);
      expect(r.code, what).toBe(1);
      expect(r.stderr, what).toContain(
        `not restored: "docs search" ("mcpServers") still runs portcullis but ${part} changed since wrap, so unwrap`,
      );
      expect(r.stdout, what).not.toContain("dropped with the wrap");
      expect(parseJsonc(read(file)).mcpServers["docs search"], what).toEqual(edited);
      expect(records(u), what).toHaveLength(1);
    }
  });

  it("Codex TOML: --on-change restart added before '--' in the file's text: unwrap gives back the user's file byte for byte and names the option", async () => {
    const u = user();
    const file = u.files.codex;
    const before = read(file);
    const wrap = await u.cli(["wrap", "codex"]);
    expect(wrap.code, wrap.stderr).toBe(0);
    const wrapped = read(file);
    const edited = wrapped.replace(
      '"--label", "inventory", "--"',
      '"--label", "inventory", "--on-change", "restart", "--"',
    );
    expect(edited).not.toBe(wrapped);
    writeFileSync(file, edited);
    const r = await u.cli(["unwrap", "codex"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      `${file}: restored inventory, docs\n` +
        "  inventory: dropped with the wrap, the run options added since: --on-change restart\n" +
        UNWRAP_NEXT,
    );
    expect(read(file)).toBe(before);
    expect(records(u)).toEqual([]);
  });

  it("Codex TOML: an argument after '--' changed is still refused, the file left as it is", async () => {
    const u = user();
    const file = u.files.codex;
    expect((await u.cli(["wrap", "codex"])).code).toBe(0);
    const edited = read(file).replace(
      '"--label", "inventory", "--", "node", "dist/server.js"',
      '"--label", "inventory", "--on-change", "restart", "--", "node", "dist/other.js"',
    );
    writeFileSync(file, edited);
    const r = await u.cli(["unwrap", "codex"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`not restored: "inventory" ("mcp_servers") still runs portcullis`);
    expect(r.stdout).toBe(`${file}: restored docs\n${UNWRAP_NEXT}`);
    expect(read(file)).toContain('"--on-change", "restart", "--", "node", "dist/other.js"');
    expect(read(file)).toContain(JSON.stringify(NODE));
    expect(records(u)).toHaveLength(1);
  });
});
