// `vault set NAME --host HOST` of a secret only a remote server's header uses made the local CA
// servers are told to trust for HTTP delivery ("created the local CA …"), though no egress proxy
// intercepts TLS for a header: the gateway puts the value in the request itself. Now vault set
// reads the portcullis.json found from the working directory (as vault list does) and makes no
// CA for a secret it uses only as a header; one a launched server's credential delivers over HTTP
// still gets it; so does unlock. The real CLI.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

function projectWith(servers: Record<string, unknown>): string {
  const dir = tempDir("portcullis-ca-");
  writeFileSync(join(dir, "portcullis.json"), JSON.stringify({ servers }));
  return dir;
}

const setSecret = (stateDir: string, cwd: string, name: string, host: string) =>
  runCli(["vault", "set", name, "--host", host, "--from-stdin"], {
    stateDir,
    cwd,
    env: passphraseEnv(),
    input: "a-value-long-enough\n",
  });

describe("vault set and the local CA", () => {
  it("makes none for a secret only a remote server's header uses; one a launched server's HTTP credential uses", async () => {
    const cwd = projectWith({
      remote: {
        url: "https://mcp.example.com/mcp",
        headers: { Authorization: { secret: "remote-token", format: "Bearer {}" } },
      },
      local: {
        command: "node",
        args: ["server.js"],
        credentials: { API_KEY: { secret: "api-key", hosts: ["api.example.com"] } },
      },
    });
    const stateDir = newStateDir();
    const header = await setSecret(stateDir, cwd, "remote-token", "mcp.example.com");
    expect(header.code, header.stderr).toBe(0);
    expect(header.stdout).not.toContain("local CA");
    expect(existsSync(join(stateDir, "egress-ca.pem"))).toBe(false);
    expect(existsSync(join(stateDir, "egress-ca.key"))).toBe(false);
    // nor does an unlock from here, which hands the holder the CA when there is one
    const unlock = await runCli(["unlock"], { stateDir, cwd, env: passphraseEnv() });
    expect(unlock.code, unlock.stderr).toBe(0);
    expect(unlock.stderr).not.toContain("local CA");
    expect(existsSync(join(stateDir, "egress-ca.pem"))).toBe(false);

    const egress = await setSecret(stateDir, cwd, "api-key", "api.example.com");
    expect(egress.code, egress.stderr).toBe(0);
    expect(egress.stdout).toContain("created the local CA servers will trust for HTTP delivery");
    expect(existsSync(join(stateDir, "egress-ca.pem"))).toBe(true);
    await runCli(["lock"], { stateDir });
  });
});
