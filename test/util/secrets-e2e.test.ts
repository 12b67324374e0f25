// No secret anywhere, end to end: a real gateway in front of a server whose command line carries
// secrets, a call with nested secrets that needs approval; then every command's output and every
// byte under the state directory is searched for each secret value.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SECRETS = {
  flag: "flagSecretValue0001",
  eqFlag: "eqFlagSecretValue0002",
  envWord: "envWordSecretValue0003",
  nestedPassword: "nestedPasswordValue0004",
  nestedToken: "nestedTokenValue0005",
  bearer: "bearerTokenValue0006abcdef",
  privateKey: "privateKeyValue0007",
  github: "ghp_0123456789abcdefghijABCDEFGHIJ012345",
};

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

function leaks(where: string, text: string | Buffer): string[] {
  const s = typeof text === "string" ? text : text.toString("latin1");
  return Object.entries(SECRETS)
    .filter(([, v]) => s.includes(v))
    .map(([k]) => `${k} in ${where}`);
}

describe("secrets are redacted everywhere", () => {
  it("server argv and nested call arguments: no command output and no state file contains a secret", async () => {
    const stateDir = newStateDir();
    const gw = await startGateway({
      args: [
        "--label",
        "secretive",
        "--audit-arguments",
        "clear",
        "--approval-timeout",
        "30000",
        "--",
        ...fixtureCommand("echo"),
        "--token",
        SECRETS.flag,
        `--api-key=${SECRETS.eqFlag}`,
        `DB_TOKEN=${SECRETS.envWord}`,
      ],
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const call = gw.client.callTool({
      name: "echo",
      arguments: {
        message: `hello, use ${SECRETS.github} please`,
        opts: { password: SECRETS.nestedPassword },
        auth: { token: SECRETS.nestedToken },
        headers: { Authorization: `Bearer ${SECRETS.bearer}` },
        private_key: SECRETS.privateKey,
      },
    });
    const outputs: [string, string][] = [];
    const cli = async (args: string[], env?: Record<string, string>) => {
      const r = await runCli([...args, "--state-dir", stateDir], { env });
      outputs.push([`${args.join(" ")} stdout`, r.stdout], [`${args.join(" ")} stderr`, r.stderr]);
      return r;
    };
    const pending = await waitFor(
      async () => {
        const r = await runCli(["approvals", "--json", "--state-dir", stateDir]);
        return (JSON.parse(r.stdout) as { requests: { request: string }[] }).requests[0] ?? null;
      },
      20_000,
      "an approval request",
    );
    await cli(["approvals"]);
    await cli(["approvals", "--json"]);
    await cli(["status"]);
    await cli(["status", "--json"]);
    const approved = await cli(["approve", pending.request, "--for", "session"], passphraseEnv());
    expect(approved.code).toBe(0);
    await call;
    for (const sub of ["activity", "sessions"]) {
      await cli(["audit", sub], passphraseEnv());
      await cli(["audit", sub, "--json"], passphraseEnv());
    }
    await cli(["audit", "export"]);
    // the redaction did happen where a value was shown (not only absent output)
    const statusText = outputs.find(([w]) => w === "status stdout")![1];
    expect(statusText).toContain("--token [redacted]");
    expect(outputs.find(([w]) => w === "approvals --json stdout")![1]).toContain("[redacted]");

    const found: string[] = [];
    for (const [where, text] of outputs) found.push(...leaks(where, text));
    found.push(...leaks("gateway stderr", gw.stderr()));
    await gw.close();
    for (const f of filesUnder(stateDir)) found.push(...leaks(f, readFileSync(f)));
    expect(found).toEqual([]);
    const mode = (f: string) => statSync(join(stateDir, f)).mode & 0o777;
    expect(mode("portcullis.db")).toBe(0o600);
    expect(statSync(stateDir).mode & 0o777).toBe(0o700);
  });
});
