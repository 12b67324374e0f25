// doctor's advice for a bare server whose label another server already has: the `--label
// KEY=LABEL` its command gives must be a label nothing else has or will take, one the gateway
// accepts, and the finding says why it is there. It offered `inventory-2` beside a bare server
// named `inventory-2` (which the next refusal then renamed in turn), a 65-character label for a
// 63-character one (the gateway refuses it at every start), and said nothing of why. And wrap
// made a label the gateway refuses from a key such as `_private`. The real CLI in a fake home; the
// wrapped entries started as their host starts them.
import { appendFileSync, writeFileSync } from "node:fs";
import { parse as parseJsonc } from "jsonc-parser";
import { parse as parseToml } from "smol-toml";
import { describe, expect, it } from "vitest";
import { LABEL_PATTERN, LABEL_RULE } from "../../src/config/config.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type Finding, started, withState, writeServers } from "./doctorKit.js";
import { fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

// biome-ignore lint/suspicious/noExplicitAny: host documents are checked loosely
type Doc = any;
const labelOf = (e: { args: string[] }) => e.args[e.args.indexOf("--label") + 1];

/** doctor --json's "not behind portcullis" finding about `file`. */
async function bareFinding(u: ReturnType<typeof user>, file: string): Promise<Finding | undefined> {
  const report = JSON.parse((await u.cli(["doctor", "--json"])).stdout) as { findings: Finding[] };
  return report.findings.find((f) => f.what.startsWith(`${file}: not behind portcullis`));
}

describe("doctor's --label for a server whose label is another server's", () => {
  it("never one that another bare server of the file would take; the finding says whose label it is", async () => {
    const u = user();
    expect((await u.cli(["wrap", "cursor"])).code).toBe(0); // "inventory" is cursor's server's label now
    // codex's "inventory" is another server (other cwd and env), and beside it a bare "inventory-2"
    appendFileSync(u.files.codex, '\n[mcp_servers.inventory-2]\ncommand = "node"\nargs = ["other.js"]\n');
    const advice = await bareFinding(u, u.files.codex);
    expect(advice).toEqual({
      ok: true,
      what: `${u.files.codex}: not behind portcullis: inventory, docs, inventory-2; "inventory" is given the label "inventory-3": its own, "inventory", is another server's already (${u.files.cursor} (inventory))`,
      next: `portcullis wrap codex --servers inventory,docs,inventory-2 --label inventory=inventory-3 --state-dir ${u.stateDir}`,
    });
    // the command works as given, and each server keeps a label of its own
    const r = await u.cli(advice!.next.split(" ").slice(1));
    expect(r.code, r.stderr).toBe(0);
    const doc: Doc = parseToml(read(u.files.codex));
    expect(labelOf(doc.mcp_servers.inventory)).toBe("inventory-3");
    expect(labelOf(doc.mcp_servers["inventory-2"])).toBe("inventory-2");
    expect(labelOf(doc.mcp_servers.docs)).toBe("docs");
    expect(await bareFinding(u, u.files.codex)).toBeUndefined();
  });

  it("a label at the length limit: the suggestion stays a label the gateway takes, and the wrapped entry starts", async () => {
    const u = user();
    withState(u);
    const key = `k${"x".repeat(62)}`; // 63 characters: with "-2" it would be 65
    const [command, ...args] = fixtureCommand("echo");
    writeServers(u.files["claude-code"], { [key]: { command, args } });
    expect((await u.cli(["wrap", "claude-code"])).code).toBe(0);
    const cursor = writeServers(u.files.cursor, { [key]: { command, args: [...args, "--other"] } });
    const advice = await bareFinding(u, cursor);
    const suggested = `${key.slice(0, 62)}-2`;
    expect(advice?.next).toBe(
      `portcullis wrap cursor --servers ${key} --label ${key}=${suggested} --state-dir ${u.stateDir}`,
    );
    expect(suggested).toMatch(LABEL_PATTERN);
    const r = await u.cli(advice!.next.split(" ").slice(1));
    expect(r.code, r.stderr).toBe(0);
    const entry = (parseJsonc(read(cursor)) as Doc).mcpServers[key];
    expect(labelOf(entry)).toBe(suggested);
    // as the host starts it: the gateway takes the label (it refused a longer one, exit 2)
    const gateway = started(entry, u.project);
    expect(gateway.stderr).not.toMatch(/--label must be a plain label/);
    expect(gateway.status, gateway.stderr).toBe(0);
  });

  it("wrap makes a label the gateway takes from any key, and takes no other with --label", async () => {
    const u = user();
    withState(u);
    const [command, ...args] = fixtureCommand("echo");
    writeServers(u.files["claude-code"], { _private: { command, args } });
    const r = await u.cli(["wrap", "claude-code"]);
    expect(r.code, r.stderr).toBe(0);
    const entry = (parseJsonc(read(u.files["claude-code"])) as Doc).mcpServers._private;
    expect(labelOf(entry)).toBe("private");
    const gateway = started(entry, u.project);
    expect(gateway.status, gateway.stderr).toBe(0);
    writeFileSync(u.files.cursor, JSON.stringify({ mcpServers: { x: { command, args } } }));
    const refused = await u.cli(["wrap", "cursor", "--label", "x=_x"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      `portcullis wrap: --label takes KEY=LABEL, the LABEL one 'portcullis run --label' takes (${LABEL_RULE}; e.g. --label inventory=inventory-cursor).\n`,
    );
  });
});
