// A host declared twice, the same by value (hostValue: `a.example` and `A.example.`, `127.1:8443`
// and `127.0.0.1:8443`), is refused where it is written, as a key written twice in portcullis.json
// and a header named twice in any letter case are: `vault set` kept and listed it twice
// (`a.example, a.example`), `credentials.*.hosts` loaded it twice. Refused by position, naming
// both, never by value (a word given to --host may be the secret in the wrong place). The same
// name with and without a port is two destinations (443 and 80, or the port), and is kept. The
// real CLI.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const BY_VALUE =
  "hosts are compared by value, as requests are: letter case, a trailing dot and how an address is written make no difference";

function vaultSet(stateDir: string, args: string[]) {
  return runCli(["vault", "set", ...args, "--from-stdin"], { stateDir, env: passphraseEnv(), input: "v" });
}

async function listedSecrets(stateDir: string): Promise<{ name: string; hosts: string[] }[]> {
  return JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout).secrets;
}

describe("a host declared twice", () => {
  it("vault set refuses it naming both by position, and stores nothing", async () => {
    const stateDir = newStateDir();
    for (const [hosts, said] of [
      [["a.example", "A.example."], "--host number 2 is the same host as number 1"],
      [["127.1:8443", "b.example", "127.0.0.1:8443"], "--host number 3 is the same host as number 1"],
    ] as const) {
      const r = await vaultSet(stateDir, ["api", ...hosts.flatMap((h) => ["--host", h])]);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(`portcullis vault set: ${said} (${BY_VALUE}); give each host once.\n`);
    }
    expect(await listedSecrets(stateDir)).toEqual([]);
  });

  it("vault set keeps a name given with and without a port: two destinations", async () => {
    const stateDir = newStateDir();
    const r = await vaultSet(stateDir, ["api", "--host", "a.example", "--host", "A.example:443"]);
    expect(r.code, r.stderr).toBe(0);
    expect((await listedSecrets(stateDir))[0]?.hosts).toEqual(["a.example", "a.example:443"]);
  });

  it("portcullis.json's credentials.*.hosts: run refuses it naming the file and the key", async () => {
    const file = join(tempDir("portcullis-hosts-"), "portcullis.json");
    const hosts = ["a.example", "b.example:8443", "A.example."];
    const credentials = { API_KEY: { secret: "inventory-api", deliver: "http", hosts } };
    writeFileSync(file, JSON.stringify({ servers: { inventory: { command: "node", credentials } } }));
    const r = await runCli(["run", "inventory", "--config", file], { stateDir: newStateDir() });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis run: ${file}: servers.inventory.credentials.API_KEY.hosts[2] "A.example." is the same host as hosts[0] (${BY_VALUE}); keep one.\n`,
    );
  });
});
