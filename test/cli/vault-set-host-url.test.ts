// `vault set NAME --host https://api.example.com` was refused as "not HOST or HOST:PORT" without
// saying what to write instead. A URL's host is now said back as the flag should be written (a
// port kept when it is not the scheme's default), and nothing else of the word (its path, query or
// userinfo may hold a token); a word that is no URL is still not repeated. The real CLI; the same
// for a URL in portcullis.json's credentials.*.hosts, which names the key.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const setWithHost = (host: string) =>
  runCli(["vault", "set", "api-key", "--host", host, "--from-stdin"], {
    stateDir: newStateDir(),
    env: passphraseEnv(),
    input: "a-value-long-enough\n",
  });

describe("vault set --host given a URL", () => {
  it.each([
    ["https://api.example.com", "--host api.example.com."],
    ["https://user:tok3n-secret@API.example.com:443/v1?key=q", "--host api.example.com."],
    ["http://api.example.com:8080/", "--host api.example.com:8080."],
    ["https://[::1]:8443", "--host [::1]:8443."],
  ])("%j: says to write the host without the scheme, naming the flag", async (url, instead) => {
    const r = await setWithHost(url);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `vault set: --host number 1 is not HOST or HOST:PORT but a URL; write its host without the scheme: ${instead}`,
    );
    expect(r.stderr).not.toContain("tok3n-secret");
    expect(r.stderr).not.toContain("key=q");
  });

  it("a word that is no URL is still refused without being said back", async () => {
    const r = await setWithHost("sk_live:abc:def");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("vault set: --host number 1 is not HOST or HOST:PORT.");
    expect(r.stderr).not.toContain("sk_live");
  });

  it("a URL in credentials.*.hosts names the key and the host to write", async () => {
    const cwd = tempDir("portcullis-host-url-");
    writeFileSync(
      join(cwd, "portcullis.json"),
      JSON.stringify({
        servers: {
          inventory: {
            command: "node",
            credentials: { API_KEY: { secret: "inventory-api", hosts: ["https://api.example.com:8443/v1"] } },
          },
        },
      }),
    );
    const r = await runCli(["run", "inventory", "--config", join(cwd, "portcullis.json")], {
      stateDir: newStateDir(),
      cwd,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'servers.inventory.credentials.API_KEY.hosts[0] "https://api.example.com:8443/v1" is not HOST or HOST:PORT but a URL; write its host without the scheme: "api.example.com:8443"',
    );
  });
});
