// `run --url URL --header-secret 'Name: FORMAT=SECRET'`: the command-line form of config headers
// {"secret", "format"}. Only the secret's NAME is on the command line: the upstream receives the
// value the vault holder releases, and that value is in no process's argv, nor on stdout/stderr,
// in the audit views or in `status --json`. Held to the file's checks at start (the secret in the
// vault, stored for the URL's host or the environment), refused naming the flag and the fix.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitForAuditEvents } from "../helpers/auditWait.js";
import { readJsonLines, tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret } from "../vault/helpers.js";
import { startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

describe("run --url --header-secret", () => {
  it("the upstream receives the released value; it is in no argv, output, audit view or status", async () => {
    const SECRET = "flag-vault-token-6b1d93e07a";
    const log = join(tempDir("portcullis-hdr-"), "headers.jsonl");
    const server = await startFixture({ FIXTURE_HEADER: "Authorization", FIXTURE_HEADER_LOG: log }, null);
    cleanup.push(() => server.kill());
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    await storeSecret(stateDir, "remote-mcp-token", SECRET, "--host", `127.0.0.1:${server.port}`);
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);

    const gw = await startGateway({
      args: [
        "--url",
        server.url,
        "--header-secret",
        "Authorization: Bearer {}=remote-mcp-token",
        "--approval",
        "none",
      ],
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    expect(text(await gw.client.callTool({ name: "echo", arguments: { message: "x" } }))).toBe("Echo: x");
    const seen = readJsonLines<{ value: string | null }>(log);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.every((s) => s.value === `Bearer ${SECRET}`)).toBe(true);

    // what every process of the user can read of the gateway: its command line
    const argv = readFileSync(`/proc/${gw.pid}/cmdline`, "utf8");
    expect(argv).toContain("remote-mcp-token");
    expect(argv).not.toContain(SECRET);

    await waitForAuditEvents(stateDir, (all) => all.some((e) => e.type === "tool_result"), "the call's end");
    const status = await runCli(["status", "--json", "--state-dir", stateDir]);
    const audit = await runCli(["audit", "activity", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(status.code).toBe(0);
    const shown = [gw.stderr(), status.stdout, status.stderr, audit.stdout, audit.stderr].join("\n");
    expect(shown).not.toContain(SECRET);
    expect(JSON.stringify(gw.received())).not.toContain(SECRET);
  });

  it("refuses at start a secret not in the vault or stored for another host, naming the flag and the fix", async () => {
    const stateDir = newStateDir();
    await storeSecret(stateDir, "elsewhere-token", "elsewhere-value-3c8f", "--host", "api.example.com");
    const url = "http://127.0.0.1:9/mcp";
    const missing = await runCli(
      ["run", "--url", url, "--header-secret", "Authorization: Bearer {}=absent-token"],
      { stateDir },
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      `run: --header-secret "Authorization" names the secret "absent-token", which is not in the vault of ${stateDir}; store it first with 'portcullis vault set absent-token --host 127.0.0.1:9 --state-dir ${stateDir}'.`,
    );
    const wrongHost = await runCli(["run", "--url", url, "--header-secret", "X-Api-Key=elsewhere-token"], {
      stateDir,
    });
    expect(wrongHost.code).toBe(2);
    expect(wrongHost.stderr).toContain(
      `run: --header-secret "X-Api-Key" sends the secret "elsewhere-token" to 127.0.0.1:9 (--url), but the vault releases it over HTTP only to api.example.com;`,
    );
    expect(wrongHost.stderr).not.toContain("elsewhere-value-3c8f");

    // the token itself pasted where its vault name goes: a name the vault lacks, never printed back
    // (stderr reaches the host's logs and the agent)
    const token = "sk-live-4f8a1c9e7b2d5063a1f4";
    const pasted = await runCli(["run", "--url", url, "--header-secret", `X-Api-Key=${token}`], { stateDir });
    expect(pasted.code).toBe(2);
    expect(pasted.stderr).toContain(
      `run: --header-secret "X-Api-Key" names a secret by a name that reads as a secret value (not shown: a credential pasted where the vault secret's name goes?), which is not in the vault of ${stateDir}; write the secret's name there, and store its value with 'portcullis vault set NAME --host 127.0.0.1:9 --state-dir ${stateDir}'.`,
    );
    expect(pasted.stdout + pasted.stderr).not.toContain("4f8a1c9e7b2d5063a1f4");
  });

  it("refuses a malformed flag, one naming a header given already, and one without --url", async () => {
    const url = "https://example.com/mcp";
    const cases: [string[], string][] = [
      [
        ["--url", url, "--header-secret", "Authorization"],
        "run: --header-secret must look like 'Name=SECRET'",
      ],
      [
        ["--url", url, "--header-secret", "Authorization: Bearer=tok"],
        'run: the format of --header-secret "Authorization" must have exactly one "{}"',
      ],
      [["--url", url, "--header-secret", "Host=tok"], '--header-secret "Host" is set by portcullis itself'],
      [
        ["--url", url, "--header", "X-Key: v-77e1a0", "--header-secret", "x-key=tok"],
        'run: --header-secret "x-key" names the header of an earlier --header "X-Key"',
      ],
      [
        ["--header-secret", "X-Key=tok", "--", "node", "s.js"],
        "run: --header-secret applies only with --url.",
      ],
    ];
    for (const [args, expected] of cases) {
      const r = await runCli(["run", ...args]);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toContain(expected);
      expect(r.stderr).not.toContain("77e1a0");
    }
  });
});
