// A remote server guarded by hand runs `portcullis run --url URL --header-secret 'Authorization:
// Bearer {}=NAME'` from a host entry (docs/onboarding.md): the secret's name is in the host file's
// args, in no portcullis.json. `vault set NAME --host HOST` (and `unlock`) judged whether to make
// the local CA for HTTP delivery from portcullis.json alone, so such a secret made it ("created
// the local CA servers will trust for HTTP delivery"), though the gateway puts a header's value in
// the request itself and no egress proxy intercepts TLS for it. Now the host entries found from
// here count as vault list reads them: a secret only their --header-secret uses makes no CA; one a
// launched server's credential delivers over HTTP still does. The real CLI, a real host file in a
// temporary home.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

it("vault set and unlock make no local CA for a secret only a host entry's --header-secret uses; an egress-delivered one still does", async () => {
  const stateDir = newStateDir();
  const root = tempDir("portcullis-host-ca-");
  const home = join(root, "home");
  const project = join(root, "project");
  mkdirSync(home);
  mkdirSync(project);
  const env = {
    ...passphraseEnv(),
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    CODEX_HOME: join(home, ".codex"),
  };
  writeFileSync(
    join(project, ".mcp.json"),
    JSON.stringify({
      mcpServers: {
        "docs-remote": {
          command: "portcullis",
          args: [
            "run",
            "--state-dir",
            stateDir,
            "--label",
            "docs",
            "--url",
            "https://mcp.example.com/mcp",
            "--header-secret",
            "Authorization: Bearer {}=remote-token",
          ],
        },
      },
    }),
  );
  // a launched server of the project's portcullis.json, whose credential goes through the egress proxy
  writeFileSync(
    join(project, "portcullis.json"),
    JSON.stringify({
      servers: {
        local: {
          command: "node",
          args: ["server.js"],
          credentials: { API_KEY: { secret: "api-key", hosts: ["api.example.com"] } },
        },
      },
    }),
  );
  const set = (name: string, host: string) =>
    runCli(["vault", "set", name, "--host", host, "--from-stdin"], {
      stateDir,
      cwd: project,
      env,
      input: "a-value-long-enough\n",
    });
  const ca = join(stateDir, "egress-ca.pem");

  const header = await set("remote-token", "mcp.example.com");
  expect(header.code, header.stderr).toBe(0);
  // was: "created the local CA servers will trust for HTTP delivery: …/egress-ca.pem"
  expect(header.stdout).not.toContain("local CA");
  expect(existsSync(ca)).toBe(false);
  expect(existsSync(join(stateDir, "egress-ca.key"))).toBe(false);
  // the use it was judged by, as vault list shows it
  const list = await runCli(["vault", "list"], { stateDir, cwd: project, env });
  expect(list.stdout).toContain("docs-remote in ");
  // nor does an unlock from here
  const unlock = await runCli(["unlock"], { stateDir, cwd: project, env });
  expect(unlock.code, unlock.stderr).toBe(0);
  expect(unlock.stderr).not.toContain("local CA");
  expect(existsSync(ca)).toBe(false);

  const egress = await set("api-key", "api.example.com");
  expect(egress.code, egress.stderr).toBe(0);
  expect(egress.stdout).toContain("created the local CA servers will trust for HTTP delivery");
  expect(existsSync(ca)).toBe(true);
  await runCli(["lock"], { stateDir });
});
