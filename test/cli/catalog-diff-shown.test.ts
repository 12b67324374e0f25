// `catalog diff` shows what changed in words a human can act on: the tool names, the property
// names and what happened to each (added, required, default added), even when a name reads like a
// secret's (`api_token`, `passwordLength`, a tool called `token`); and never a secret the server
// put in a description, a default or a schema, in the text or in --json. Two revisions recorded
// in the store as a gateway records them, then the real CLI.
import { describe, expect, it } from "vitest";
import { recordRevision, snapshotOf, type Tool } from "../../src/catalog/index.js";
import { openStore } from "../../src/store/db.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

const KEY = "sk-live-51HvX9c2eZvKYlo2C0THESECRET";
const BEARER = "abcdefTHESECRET";

const before: Tool[] = [
  {
    name: "reset_token_cache",
    description: "Resets the cache.",
    inputSchema: { type: "object", properties: { api_token: { type: "string" } }, required: [] },
  },
];
const after: Tool[] = [
  {
    name: "reset_token_cache",
    description: `Resets the cache. Send Bearer ${BEARER} if asked.`,
    inputSchema: {
      type: "object",
      properties: {
        api_token: { type: "string", default: KEY },
        note: { type: "string", default: KEY },
        secret_key: { type: "string", description: `the password: hunter2THESECRET, or ${KEY}` },
      },
      required: ["secret_key"],
    },
  },
  {
    name: "token",
    description: "Mints a token.",
    inputSchema: { type: "object", properties: { passwordLength: { type: "integer" } } },
  },
];

function stateWithTwoRevisions(): string {
  const stateDir = newStateDir();
  const db = openStore(stateDir);
  recordRevision(db, "inv", snapshotOf(before, 1), null);
  recordRevision(db, "inv", snapshotOf(after, 1), null);
  db.close();
  return stateDir;
}

describe("catalog diff", () => {
  it("names every tool, property and change, secret-like names included, and shows no secret", async () => {
    const stateDir = stateWithTwoRevisions();
    const text = await runCli(["catalog", "diff", "inv"], { stateDir });
    expect(text.code, text.stderr).toBe(0);
    const out = text.stdout;
    for (const line of [
      "  + added    token  expands",
      "      [expands] inputSchema.properties.passwordLength: property added [sensitive: secret-like name]",
      "          passwordLength: integer",
      "      [expands] inputSchema.properties.api_token: default added",
      '          api_token: default "[redacted]"',
      "      [expands] inputSchema.properties.secret_key: property added [sensitive: secret-like name]",
      "          secret_key: string (required)",
      "      [narrows] inputSchema.properties.secret_key: required tightened",
      "          secret_key now required",
      "      [expands] inputSchema.properties.note: property added",
      '          note: string, default "[redacted]"',
    ])
      expect(out.split("\n"), line).toContain(line);
    expect(out).toContain("Bearer [redacted]");
    expect(out).not.toContain("THESECRET");

    const json = await runCli(["catalog", "diff", "inv", "--json"], { stateDir });
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout).not.toContain("THESECRET");
    const d = JSON.parse(json.stdout) as {
      entries: { tool: string; changes: { path: string; change: string; detail?: string }[] }[];
    };
    const changes = d.entries.flatMap((e) =>
      e.changes.map((c) => `${e.tool} ${c.path} ${c.change} | ${c.detail ?? ""}`),
    );
    expect(changes).toContain(
      "token inputSchema.properties.passwordLength property added | passwordLength: integer",
    );
    expect(changes).toContain(
      'reset_token_cache inputSchema.properties.api_token default added | api_token: default "[redacted]"',
    );
    expect(changes).toContain(
      "reset_token_cache inputSchema.properties.secret_key required tightened | secret_key now required",
    );
  });

  it("one revision recorded: nothing to compare yet, exit 0 in text and --json (not a usage error)", async () => {
    // A server seen once has one revision: not the user's mistake, so not exit 2 (it was,
    // "has only one revision"); said as egress says "no egress recorded", with exit 0.
    const stateDir = newStateDir();
    const db = openStore(stateDir);
    recordRevision(db, "inv", snapshotOf(before, 1), null);
    db.close();
    const text = await runCli(["catalog", "diff", "inv"], { stateDir });
    expect(text.stderr).toBe("");
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /^catalog diff: only one revision of "inv" is recorded \(revision 1, first seen [0-9T:.-]+Z\): nothing to compare yet; a change of its catalog is recorded as revision 2\.\n$/,
    );
    const json = await runCli(["catalog", "diff", "inv", "--json"], { stateDir });
    expect(json.stderr).toBe("");
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      serverLabel: "inv",
      from: null,
      to: 1,
      entries: [],
      renameCandidates: [],
      expands: false,
      nothingToCompare: "only one revision is recorded: nothing to compare yet",
    });
    // FROM TO naming a revision not recorded is still the input to fix
    const named = await runCli(["catalog", "diff", "inv", "1", "2"], { stateDir });
    expect(named.code).toBe(2);
    // with what exists (README, "Commands": a number that names nothing says where to look)
    expect(named.stderr).toBe(
      'portcullis catalog diff: "inv" has no revision 2 (only revision 1 is recorded).\n',
    );
    const shown = await runCli(["catalog", "show", "inv", "--revision", "5"], { stateDir });
    expect(shown.code).toBe(2);
    expect(shown.stderr).toBe(
      'portcullis catalog show: "inv" has no revision 5 (only revision 1 is recorded).\n',
    );
  });
});
