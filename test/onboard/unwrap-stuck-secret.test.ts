// unwrap cannot give back an entry whose wrapped command or args the host changed since: it says
// what to put back by hand. It printed the original args whole, a credential after its flag
// (`--api-key VALUE`) included, on stderr (terminals' scrollback, agents' transcripts), where
// wrap --dry-run and doctor never print one. The words that read as a credential are shown as
// "[redacted]", and the sentence names the backup and the wrap record that hold them. Real CLI.
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseJsonc } from "jsonc-parser";
import { describe, expect, it } from "vitest";
import { fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

describe("unwrap of an entry changed since wrap", () => {
  it("says the args to put back without the credential among them, naming where it is kept", async () => {
    const u = user();
    const file = u.files["claude-code"];
    const key = "Zq9x8w7v6u5t4s3r2q1p";
    writeFileSync(
      file,
      JSON.stringify({
        mcpServers: { api: { command: "node", args: ["server.mjs", "--api-key", key, "--port", "8080"] } },
      }),
    );
    expect((await u.cli(["wrap", "claude-code"])).code).toBe(0);
    const doc = parseJsonc(read(file)) as { mcpServers: { api: { args: string[] } } };
    doc.mcpServers.api.args.push("--verbose"); // the host edits wrap's args
    writeFileSync(file, JSON.stringify(doc, null, 2));

    const r = await u.cli(["unwrap", "claude-code"]);
    expect(r.code).toBe(1);
    const [record] = readdirSync(join(u.stateDir, "wrapped"));
    expect(r.stderr).toBe(
      `portcullis unwrap: ${file}: not restored: "api" ("mcpServers") still runs portcullis but the server after its "--" (the command and args portcullis starts) changed since wrap, so unwrap cannot tell what to give back and kept its record: ` +
        `set its "command" to "node" and set its "args" to ["server.mjs","--api-key","[redacted]","--port","8080"] by hand (adding any argument you meant the server to get; ` +
        `each "[redacted]" stands for a word that reads as a credential, not printed here: copy it from ${file}.portcullis-backup, the file before its first wrap, or from the wrap record ${join(u.stateDir, "wrapped", record!)}), ` +
        `then run portcullis unwrap ${file} --state-dir ${u.stateDir} again to clear the record\n`,
    );
    expect(r.stdout + r.stderr).not.toContain(key.slice(0, 8));
    // where it says the value is, it is
    expect(read(`${file}.portcullis-backup`)).toContain(key);
  });
});
