// portcullis wrap --json: what was wrapped (or, with --dry-run, would be) and what was left alone
// and why, as JSON for a script; a dry run still writes nothing, and a token of the host file is
// not in it (it carries no diff). The real CLI in a fake home.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

describe("portcullis wrap --json", () => {
  it("--dry-run --json writes nothing and says what would be wrapped; --json says what was, and the init to run", async () => {
    const u = user();
    const file = u.files["claude-code"];
    const token = "ghp_Zq8vT3nW0pXy7RkL2mHcAa1Bb2Cc3Dd4Ee5F";
    const doc = JSON.parse(read(file));
    doc.mcpServers["inventory-local"].env.GITHUB_TOKEN = token;
    doc.mcpServers.remote.headers = { Authorization: `Bearer ${token}`, "X-Team": "blue" };
    writeFileSync(file, JSON.stringify(doc, null, 2));
    const before = read(file);
    const other = join(u.root, "other state");

    const dry = await u.cli(["wrap", "claude-code", "--dry-run", "--json", "--state-dir", other]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stderr).toBe("");
    expect(dry.stdout).not.toContain(token);
    const files = [
      {
        host: "claude-code",
        file,
        wrapped: ["inventory-local", "docs search"],
        leftAlone: [{ key: "remote", why: "an HTTP entry (url), which wrap leaves alone" }],
        // no entry holds a key its host does not read
        refused: [],
        // wrap leaves the env as it is: the token stays in clear in the host file, said by name
        credentialsInClear: [{ server: "inventory-local", variables: ["GITHUB_TOKEN"] }],
        // so does the HTTP entry's header, which wrap leaves alone
        headersInClear: [{ server: "remote", headers: ["Authorization"] }],
        // no store in this state directory: no label's history is another server's
        labelHistory: [],
      },
    ];
    expect(JSON.parse(dry.stdout)).toEqual({
      dryRun: true,
      stateDir: other,
      files,
      keyring: false,
      init: `portcullis init --state-dir '${other}'`,
    });
    // the same in the lines, the value neither printed nor hinted at
    const lines = await u.cli(["wrap", "claude-code", "--dry-run", "--state-dir", other]);
    expect(lines.stdout).toContain(
      `\n  inventory-local would keep "GITHUB_TOKEN" in its "env", in clear: every process of this user can read the host file; "portcullis doctor --state-dir '${other}'" says how to move it to the vault\n`,
    );
    expect(lines.stdout).not.toContain(token.slice(4, 16));
    // a dry run: nothing written, not even the state directory
    expect(read(file)).toBe(before);
    expect(existsSync(other)).toBe(false);

    const real = await u.cli(["wrap", "claude-code", "--json", "--state-dir", other]);
    expect(real.code, real.stderr).toBe(0);
    expect(JSON.parse(real.stdout)).toEqual({
      dryRun: false,
      stateDir: other,
      files,
      keyring: false,
      init: `portcullis init --state-dir '${other}'`,
    });
    expect(read(file)).not.toBe(before);
    // again: both already wrapped, said as wrap's lines say it
    const again = JSON.parse((await u.cli(["wrap", "claude-code", "--json", "--state-dir", other])).stdout);
    expect(again.files[0].wrapped).toEqual([]);
    expect(again.files[0].leftAlone.map((s: { key: string }) => s.key)).toEqual([
      "inventory-local",
      "docs search",
      "remote",
    ]);
    expect(again.files[0].leftAlone[0].why).toBe(
      `already wrapped; undo with portcullis unwrap ${file} --state-dir '${other}'`,
    );
  });
});
