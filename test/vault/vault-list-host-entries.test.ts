// An HTTP server is guarded by hand with a host entry that runs `portcullis run --url URL
// --header-secret 'Authorization: Bearer {}=NAME'` (docs/onboarding.md): the secret's name is in
// the host file's args, in no portcullis.json. `vault list` read only portcullis.json, so it said
// of that secret "used by: not known" (`"usedBy": null`), or "no server" beside a portcullis.json
// that does not name it, and a clean-up of unused secrets removed one the gateway needs at its
// next start. Now it reads the host entries found from here, where doctor reads them: the entry's
// key and file, the header and the URL's host, never a value; an entry of another state directory
// is not this vault's; a URL whose host the secret is not stored for is warned of, as run refuses
// it. The real CLI, real host files in a temporary home.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const VALUE = "value-of-the-secret-7f3e9a21";

it("vault list names the host entries that send a secret with --header-secret", async () => {
  const stateDir = newStateDir();
  const set = await runCli(
    ["vault", "set", "remote-mcp-token", "--from-stdin", "--host", "mcp.example.com"],
    { stateDir, env: passphraseEnv(), input: VALUE },
  );
  expect(set.code, set.stderr).toBe(0);
  const root = tempDir();
  const home = join(root, "home");
  const project = join(root, "project");
  mkdirSync(home);
  mkdirSync(join(project, ".cursor"), { recursive: true });
  const env = { HOME: home, XDG_CONFIG_HOME: join(home, ".config"), CODEX_HOME: join(home, ".codex") };
  const guarded = (dir: string, url: string) => ({
    command: "portcullis",
    args: [
      "run",
      "--state-dir",
      dir,
      "--label",
      "docs",
      "--url",
      url,
      "--header-secret",
      "Authorization: Bearer {}=remote-mcp-token",
    ],
  });
  const claude = join(project, ".mcp.json");
  const cursor = join(project, ".cursor", "mcp.json");
  const write = (url: string) => {
    writeFileSync(claude, JSON.stringify({ mcpServers: { "docs-remote": guarded(stateDir, url) } }));
    // the same shape in another state directory: its gateway takes that vault's secret, not this one's
    writeFileSync(cursor, JSON.stringify({ mcpServers: { elsewhere: guarded(newStateDir(), url) } }));
  };
  const list = async () => {
    const text = await runCli(["vault", "list"], { stateDir, env, cwd: project });
    const json = await runCli(["vault", "list", "--json"], { stateDir, env, cwd: project });
    expect(text.code, text.stderr).toBe(0);
    expect(json.code, json.stderr).toBe(0);
    expect(text.stdout + text.stderr + json.stdout + json.stderr).not.toContain(VALUE);
    return { text: text.stdout, usedBy: JSON.parse(json.stdout).secrets[0].usedBy as unknown };
  };

  write("https://mcp.example.com/mcp");
  const used = await list();
  // was: "used by: not known (no portcullis.json found from here)", "usedBy": null
  expect(used.text).toContain(
    `used by: docs-remote in ${claude} (header Authorization, sent to mcp.example.com)\n`,
  );
  expect(used.text).not.toContain("elsewhere");
  expect(used.text).not.toContain("warning:");
  expect(used.usedBy).toEqual([
    {
      server: "docs-remote",
      header: "Authorization",
      deliver: "header",
      hosts: ["mcp.example.com"],
      hostFile: claude,
    },
  ]);

  // the entry's URL edited to point elsewhere: its gateway would refuse to start, and the list says why
  write("https://other.example.com/mcp");
  const moved = await list();
  expect(moved.text).toContain(
    `used by: docs-remote in ${claude} (header Authorization, sent to other.example.com)\n`,
  );
  expect(moved.text).toContain(
    `  warning: ${claude}: server "docs-remote": --header-secret "Authorization" sends the secret "remote-mcp-token" to other.example.com (--url), but the vault releases it over HTTP only to mcp.example.com;`,
  );

  // beside a portcullis.json that does not name it: both are read, the host entry's use listed
  writeFileSync(
    join(project, "portcullis.json"),
    JSON.stringify({ servers: { local: { command: "node" } } }),
  );
  write("https://mcp.example.com/mcp");
  const beside = await list();
  expect(beside.text).toContain(
    `used by: docs-remote in ${claude} (header Authorization, sent to mcp.example.com)\n`,
  );
});
