// portcullis reinstalled elsewhere, or node upgraded: a wrapped entry's node ("command") or CLI
// (the first of its "args") is no longer the path wrap wrote, everything from `run` on is. unwrap
// refused such an entry as changed ("set its command … by hand"), though what it runs is still
// recognisably portcullis's `run` with the recorded server after "--". It is restored, and the
// line names what moved. The real CLI in a fake home directory.
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseJsonc } from "jsonc-parser";
import { describe, expect, it } from "vitest";
import { CLI, NODE } from "../helpers/paths.js";
import { type FakeUser, fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

// biome-ignore lint/suspicious/noExplicitAny: host documents are checked loosely
type Doc = any;

async function wrappedThenMoved(u: FakeUser, edit: (entry: Doc) => void): Promise<string> {
  const file = u.files["claude-code"];
  writeFileSync(file, JSON.stringify({ mcpServers: { docs: { command: "npx", args: ["-y", "docs-mcp"] } } }));
  const wrap = await u.cli(["wrap", "claude-code"]);
  expect(wrap.code, wrap.stderr).toBe(0);
  const doc: Doc = parseJsonc(read(file));
  edit(doc.mcpServers.docs);
  writeFileSync(file, JSON.stringify(doc, null, 2));
  return file;
}

describe("unwrap of an entry whose node or portcullis CLI moved since wrap", () => {
  const moves: [string, (e: Doc) => void, string][] = [
    ["node", (e) => (e.command = "/opt/node-22/bin/node"), `node ${NODE} → /opt/node-22/bin/node`],
    [
      "the CLI",
      (e) => (e.args[0] = "/usr/lib/node_modules/portcullis/dist/cli/main.cjs"),
      `CLI ${CLI} → /usr/lib/node_modules/portcullis/dist/cli/main.cjs`,
    ],
    [
      "the bin in place of node and CLI",
      (e) => {
        e.command = "portcullis";
        e.args.shift();
      },
      `launcher ${NODE} ${CLI} → portcullis`,
    ],
  ];
  for (const [what, edit, named] of moves)
    it(`${what}: restored, the move named, the record gone`, async () => {
      const u = user();
      const file = await wrappedThenMoved(u, edit);
      const r = await u.cli(["unwrap", "claude-code"]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`${file}: restored docs\n`);
      expect(r.stdout).toContain(
        `  docs: restored though its launcher is not the one wrap wrote (${named}): it still runs portcullis's run with the recorded server after "--"\n`,
      );
      expect(parseJsonc(read(file)).mcpServers.docs).toEqual({ command: "npx", args: ["-y", "docs-mcp"] });
      expect(readdirSync(join(u.stateDir, "wrapped"))).toEqual([]);
    });

  it("a moved node with the server after '--' changed is still refused", async () => {
    const u = user();
    const file = await wrappedThenMoved(u, (e) => {
      e.command = "/opt/node-22/bin/node";
      e.args.push("--verbose");
    });
    const r = await u.cli(["unwrap", "claude-code"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("not restored:");
    expect(parseJsonc(read(file)).mcpServers.docs.command).toBe("/opt/node-22/bin/node");
  });
});
