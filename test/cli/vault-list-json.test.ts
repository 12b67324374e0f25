// `vault list --json` carries the facts its text says about who uses each secret. The text says
// "not known" when the portcullis.json found from here does not load, or when none is found;
// --json said `"usedBy": []` either way, which reads as "no server uses it" (a script that
// cleans up unused secrets would remove one a server needs). Now: `usedBy` is null when not
// known, and `config` names the file read and why it did not load. The real CLI.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

describe("vault list --json says what the text says of who uses a secret", () => {
  it("known from a file that loads, not known (null) from one that does not or from none", async () => {
    const stateDir = newStateDir();
    const env = passphraseEnv();
    const set = await runCli(["vault", "set", "reports-ro", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env,
      input: "value-of-the-secret-1234",
    });
    expect(set.code, set.stderr).toBe(0);
    const root = tempDir();
    const list = async (cwd: string) => {
      const text = await runCli(["vault", "list"], { stateDir, cwd });
      const json = await runCli(["vault", "list", "--json"], { stateDir, cwd });
      expect(json.code, json.stderr).toBe(0);
      return { text: text.stdout, json: JSON.parse(json.stdout) };
    };

    const good = join(root, "good");
    mkdirSync(good);
    writeFileSync(
      join(good, "portcullis.json"),
      JSON.stringify({
        servers: { reports: { command: "node", credentials: { REPORTS_TOKEN: "reports-ro" } } },
      }),
    );
    const used = await list(good);
    expect(used.text).toContain("used by: reports (REPORTS_TOKEN, env)");
    expect(used.json.config).toEqual({ file: join(good, "portcullis.json"), problem: null });
    expect(used.json.secrets[0].usedBy).toEqual([
      { server: "reports", env: "REPORTS_TOKEN", deliver: "env", hosts: [] },
    ]);

    const typo = join(root, "typo");
    mkdirSync(typo);
    writeFileSync(
      join(typo, "portcullis.json"),
      JSON.stringify({
        servers: {
          reports: { command: "node", onChnage: "restart", credentials: { REPORTS_TOKEN: "reports-ro" } },
        },
      }),
    );
    const unread = await list(typo);
    expect(unread.text).toContain("used by: not known (the portcullis.json found here does not load)");
    expect(unread.json.config).toEqual({
      file: join(typo, "portcullis.json"),
      problem: `${join(typo, "portcullis.json")}: servers.reports.onChnage is not a known key (did you mean onChange?)`,
    });
    expect(unread.json.secrets[0].usedBy).toBeNull();

    const none = join(root, "none");
    mkdirSync(none);
    const unknown = await list(none);
    // not "no server in the portcullis.json found here": there is none
    expect(unknown.text).toContain("used by: not known (no portcullis.json found from here)");
    expect(unknown.json.config).toEqual({ file: null, problem: null });
    expect(unknown.json.secrets[0].usedBy).toBeNull();
  });
});

// A remote server's `headers` take secrets from the vault as `credentials` do; vault list
// said such a secret was used by no server ("no server in the portcullis.json found here",
// `"usedBy": []`), which reads as safe to remove, and never warned of a URL whose host the
// secret is not stored for, as `run` refuses. The real CLI.
describe("vault list counts a remote server's vault headers", () => {
  it("names the server and header, and warns when the URL's host is not among the secret's hosts", async () => {
    const stateDir = newStateDir();
    const env = passphraseEnv();
    const set = await runCli(
      ["vault", "set", "remote-mcp-token", "--from-stdin", "--host", "mcp.example.com"],
      { stateDir, env, input: "value-of-the-secret-1234" },
    );
    expect(set.code, set.stderr).toBe(0);
    const dir = tempDir();
    const write = (url: string) =>
      writeFileSync(
        join(dir, "portcullis.json"),
        JSON.stringify({
          servers: {
            "docs-remote": {
              url,
              headers: { Authorization: { secret: "remote-mcp-token", format: "Bearer {}" } },
            },
          },
        }),
      );
    write("https://mcp.example.com/mcp");
    const text = await runCli(["vault", "list"], { stateDir, cwd: dir });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("used by: docs-remote (header Authorization, sent to mcp.example.com)");
    expect(text.stdout).not.toContain("warning:");
    const json = await runCli(["vault", "list", "--json"], { stateDir, cwd: dir });
    expect(JSON.parse(json.stdout).secrets[0].usedBy).toEqual([
      { server: "docs-remote", header: "Authorization", deliver: "header", hosts: ["mcp.example.com"] },
    ]);

    // the URL edited to point elsewhere: run would refuse it, and vault list says why
    write("https://other.example.com/mcp");
    const moved = await runCli(["vault", "list"], { stateDir, cwd: dir });
    expect(moved.stdout).toContain("used by: docs-remote (header Authorization, sent to other.example.com)");
    expect(moved.stdout).toContain(
      `warning: ${join(dir, "portcullis.json")}: servers.docs-remote.headers.Authorization sends the secret "remote-mcp-token" to other.example.com`,
    );
    const run = await runCli(["run", "docs-remote"], { stateDir, cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("servers.docs-remote.headers.Authorization sends the secret");
  });
});
