// Headers sent to a server reached by `run --url`: fixed (--header) or released by the vault
// holder per request (config headers {"secret", "format"}). The upstream receives them; their
// values never reach the client, stderr, `portcullis status` (text or --json), or the audit
// views; a locked vault stops calls at step 6 (vault_locked).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { headerNameProblem } from "../../src/supervisor/remoteHeaders.js";
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

/** A new state directory whose vault holds remote-mcp-token (with this policy) and is unlocked. */
async function unlockedWith(secret: string, ...policy: string[]): Promise<string> {
  const stateDir = newStateDir();
  cleanup.push(async () => {
    await runCli(["lock"], { stateDir });
  });
  await storeSecret(stateDir, "remote-mcp-token", secret, ...policy);
  expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
  return stateDir;
}

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

/**
 * Everything a person or another program can read of the gateway's state, as one string: once
 * every call recorded as sent has its end in the audit log (a call's end is committed after its
 * answer; read before, the views would not show it, and a value in it would go unseen).
 */
async function everythingShown(stateDir: string, stderr: string): Promise<string> {
  await waitForAuditEvents(
    stateDir,
    (all) => {
      // a call key is a gateway process's own: joined within its run
      const call = (e: Record<string, unknown>) => `${e.run} ${e.callKey}`;
      const ended = new Set(
        all.filter((e) => e.type === "tool_result" || e.type === "call_interrupted").map(call),
      );
      return all.every((e) => e.type !== "tool_called" || ended.has(call(e)));
    },
    "an end for every call sent",
  );
  const status = await runCli(["status", "--state-dir", stateDir]);
  const json = await runCli(["status", "--json", "--state-dir", stateDir]);
  const audit = await runCli(["audit", "activity", "--json", "--state-dir", stateDir], {
    env: passphraseEnv(),
  });
  expect(json.code).toBe(0);
  return [stderr, status.stdout, status.stderr, json.stdout, audit.stdout, audit.stderr].join("\n");
}

describe("run --url --header", () => {
  it("the upstream receives the header on every request; its value is never shown", async () => {
    const VALUE = "hdr-value-4f1c9a7e2b";
    const log = join(tempDir("portcullis-hdr-"), "headers.jsonl");
    const server = await startFixture({ FIXTURE_HEADER: "X-Api-Key", FIXTURE_HEADER_LOG: log }, null);
    cleanup.push(() => server.kill());
    const stateDir = newStateDir();
    const gw = await startGateway({
      args: ["--url", server.url, "--header", `X-Api-Key: ${VALUE}`, "--approval", "none"],
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    expect(text(await gw.client.callTool({ name: "echo", arguments: { message: "x" } }))).toBe("Echo: x");
    const seen = readJsonLines<{ value: string | null }>(log);
    expect(seen.length).toBeGreaterThanOrEqual(3); // initialize, initialized, tools/list, the call
    expect(seen.every((s) => s.value === VALUE)).toBe(true);

    const shown = await everythingShown(stateDir, gw.stderr());
    expect(shown).toContain("X-Api-Key"); // the name is shown…
    expect(shown).not.toContain(VALUE); // …never the value
    expect(JSON.stringify(gw.received())).not.toContain(VALUE);
  });

  it("refuses a header portcullis owns and a malformed one, naming the flag, never the value", async () => {
    const own = await runCli([
      "run",
      "--url",
      "https://example.com/mcp",
      "--header",
      "Mcp-Session-Id: abc123secret",
    ]);
    expect(own.code).toBe(2);
    expect(own.stderr).toMatch(/--header "Mcp-Session-Id" is set by portcullis itself/);
    expect(own.stderr).not.toContain("abc123secret");
    const bad = await runCli(["run", "--url", "https://example.com/mcp", "--header", "no colon here"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--header must look like 'Name: value'/);
    // node would refuse it at each request (ERR_INVALID_CHAR), every one ending its epoch
    const wide = await runCli(["run", "--url", "https://example.com/mcp", "--header", "X-Key: k€y-81d3"]);
    expect(wide.code).toBe(2);
    expect(wide.stderr).toMatch(/the value of --header "X-Key" contains a character past U\+00FF/);
    expect(wide.stderr).not.toContain("81d3");
    // one header given twice (names are case-insensitive): which was meant is not guessed
    const twice = await runCli([
      "run",
      "--url",
      "https://example.com/mcp",
      "--header",
      "X-Key: first-4f1a",
      "--header",
      "x-key: second-9c2b",
    ]);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain(
      '--header "x-key" names the header of an earlier --header "X-Key" (header names are case-insensitive); give it once.',
    );
    expect(twice.stderr).not.toMatch(/4f1a|9c2b/);
    // The Host trick (a request for one name sent to the URL's address) and the framing, in any
    // case: the CLI's sentence is the one above (checked here in process).
    for (const name of [
      "Host",
      "HOST",
      "Transfer-Encoding",
      "content-LENGTH",
      "Connection",
      "mcp-protocol-version",
    ])
      expect(headerNameProblem(name), name).toBe("is set by portcullis itself and cannot be configured");
    for (const name of ["Host ", "X-A:B", "X Key", ""])
      expect(headerNameProblem(name), JSON.stringify(name)).toBe("is not a valid HTTP header name");
  });
});

/**
 * A fixture server that logs the header `name`, behind a gateway whose configuration sends it from
 * the vault (remote-mcp-token = `secret`, format "Bearer {}"); one call made, every request
 * checked to carry the released value.
 */
async function servedWithVaultHeader(name: string, secret: string) {
  const log = join(tempDir("portcullis-hdr-"), "headers.jsonl");
  const server = await startFixture({ FIXTURE_HEADER: name, FIXTURE_HEADER_LOG: log }, null);
  cleanup.push(() => server.kill());
  const stateDir = await unlockedWith(secret, "--deliver", "http", "--host", `127.0.0.1:${server.port}`);
  const dir = tempDir("portcullis-cfg-");
  writeFileSync(
    join(dir, "portcullis.json"),
    JSON.stringify({
      servers: {
        remote: {
          url: server.url,
          headers: { [name]: { secret: "remote-mcp-token", format: "Bearer {}" } },
          approval: { default: "none" },
        },
      },
    }),
  );
  const gw = await startGateway({ args: ["remote"], cwd: dir, stateDir });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  expect(text(await gw.client.callTool({ name: "echo", arguments: { message: "x" } }))).toBe("Echo: x");
  const seen = readJsonLines<{ value: string | null }>(log);
  expect(seen.length).toBeGreaterThanOrEqual(3);
  expect(seen.every((s) => s.value === `Bearer ${secret}`)).toBe(true);
  return { gw, stateDir, log, seen, gwDir: dir };
}

describe("config headers from the vault", () => {
  it("released per request while unlocked; a locked vault gives vault_locked; the value is never shown", async () => {
    const SECRET = "vault-remote-token-9d2e71c4";
    const { gw, stateDir, log, seen, gwDir } = await servedWithVaultHeader("Authorization", SECRET);

    await runCli(["lock"], { stateDir });
    const locked = (await gw.client
      .callTool({ name: "echo", arguments: { message: "y" } })
      .catch((e) => e)) as {
      code: number;
      message: string;
      data: Record<string, unknown>;
    };
    expect(locked.code).toBe(-32056);
    // the connection needs the header, whatever the request (an initialize too): no tool is named,
    // and the unlock asked for is of this gateway's state directory
    expect(locked.data).toMatchObject({
      error: "vault_locked",
      scopes: ["remote-mcp-token"],
      retry: `ask a human to run 'portcullis unlock --state-dir ${stateDir}', then retry`,
    });
    // a client that connects now cannot initialize: told that the connection needs the header,
    // not that a tool does
    const refusedStart = await startGateway({ args: ["remote"], cwd: gwDir, stateDir }).then(
      (late) => {
        cleanup.push(() => late.close());
        return "connected";
      },
      (e: Error) => e.message,
    );
    expect(refusedStart).toContain(
      'The connection to this server needs the credential "remote-mcp-token" (a header) and the vault is locked.',
    );
    expect(readJsonLines(log).length).toBe(seen.length); // nothing more reached the server

    const shown = await everythingShown(stateDir, gw.stderr());
    expect(shown).toContain("Authorization");
    expect(shown).not.toContain(SECRET);
    expect(JSON.stringify(gw.received())).not.toContain(SECRET);
  });

  it("a header the user named `withheld` is sent like any other, its value never shown", async () => {
    // the name is the user's: it must not read as the gateway's own "this secret was withheld"
    const SECRET = "named-withheld-token-61f0";
    const { gw, stateDir } = await servedWithVaultHeader("withheld", SECRET);
    expect(await everythingShown(stateDir, gw.stderr())).not.toContain(SECRET);
    expect(JSON.stringify(gw.received())).not.toContain(SECRET);
  });

  it.each([
    ["a line break", "first-half-5a1e\nsecond-half-77c0", /its value contains a control character/],
    // node refuses it only when a request is made: each request failed and ended its epoch
    [
      "a character past U+00FF",
      "first-half-5a1e€second-half-77c0",
      /its value contains a character past U\+00FF/,
    ],
  ])(
    "a vault value that cannot be a header (%s inside) is never sent nor printed",
    async (_what, SECRET, why) => {
      const log = join(tempDir("portcullis-hdr-"), "headers.jsonl");
      const server = await startFixture({ FIXTURE_HEADER: "Authorization", FIXTURE_HEADER_LOG: log }, null);
      cleanup.push(() => server.kill());
      const stateDir = await unlockedWith(SECRET, "--deliver", "env");
      const dir = tempDir("portcullis-cfg-");
      writeFileSync(
        join(dir, "portcullis.json"),
        JSON.stringify({
          servers: {
            remote: { url: server.url, headers: { Authorization: { secret: "remote-mcp-token" } } },
          },
        }),
      );
      // nothing can be sent to the server, not even the client's initialize: it gets the reason
      const failed = await startGateway({ args: ["remote"], cwd: dir, stateDir }).then(
        async (gw) => {
          await gw.close();
          return null;
        },
        (e: Error) => e,
      );
      expect(failed?.message).toMatch(/-32059: .*"remote-mcp-token"/);
      expect(failed?.message).toMatch(why);
      expect(readJsonLines(log)).toEqual([]);
      const shown = await everythingShown(stateDir, failed!.message);
      expect(shown).not.toContain("first-half-5a1e");
      expect(shown).not.toContain("second-half-77c0");
    },
  );

  it("a secret missing, or stored for another host than the URL's, stops run at start naming the key and the fix; nothing sent", async () => {
    const SECRET = "other-host-token-3b8d";
    const log = join(tempDir("portcullis-hdr-"), "headers.jsonl");
    const server = await startFixture({ FIXTURE_HEADER: "Authorization", FIXTURE_HEADER_LOG: log }, null);
    cleanup.push(() => server.kill());
    const dir = tempDir("portcullis-cfg-");
    const file = join(dir, "portcullis.json");
    const config = (secret: string) =>
      writeFileSync(
        file,
        JSON.stringify({
          servers: {
            remote: { url: server.url, headers: { Authorization: { secret, format: "Bearer {}" } } },
          },
        }),
      );
    const key = "servers.remote.headers.Authorization";
    // stored for api.example.com only; the configuration (which an agent can edit) points elsewhere
    const stateDir = await unlockedWith(SECRET, "--deliver", "http", "--host", "api.example.com");
    config("remote-mcp-token");
    const elsewhere = await runCli(["run", "--config", file, "remote"], { stateDir });
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain(
      `run: ${file}: ${key} sends the secret "remote-mcp-token" to 127.0.0.1:${server.port} (servers.remote.url), but the vault releases it over HTTP only to api.example.com; if that server is meant to have it, store it again with 'portcullis vault set remote-mcp-token --host api.example.com --host 127.0.0.1:${server.port} --state-dir ${stateDir}', else correct servers.remote.url.`,
    );
    // a typo in the secret's name: not in the vault at all
    config("remote-mcp-tokn");
    const missing = await runCli(["run", "--config", file, "remote"], { stateDir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      `run: ${file}: ${key} names the secret "remote-mcp-tokn", which is not in the vault of ${stateDir}; store it first with 'portcullis vault set remote-mcp-tokn --host 127.0.0.1:${server.port} --state-dir ${stateDir}'.`,
    );
    expect(readJsonLines(log)).toEqual([]);
    expect(await everythingShown(stateDir, elsewhere.stderr + missing.stderr)).not.toContain(SECRET);
  });

  it("a secret stored again for another host while the gateway runs is not released for this URL: credential_missing, nothing more sent", async () => {
    const SECRET = "restored-elsewhere-token-5c2a";
    const { gw, stateDir, log, seen } = await servedWithVaultHeader("Authorization", SECRET);
    await storeSecret(stateDir, "remote-mcp-token", SECRET, "--deliver", "http", "--host", "api.example.com");
    const refused = (await gw.client
      .callTool({ name: "echo", arguments: { message: "y" } })
      .catch((e) => e)) as { code: number; message: string };
    expect(refused.code).toBe(-32059);
    expect(refused.message).toMatch(/"remote-mcp-token".*other destinations than 127\.0\.0\.1:\d+/);
    // the command that stores it again for this server's host, for this state directory
    expect(refused.message).toMatch(
      new RegExp(
        `'portcullis vault set remote-mcp-token --host 127\\.0\\.0\\.1:\\d+ --state-dir ${stateDir}' stores it again`,
      ),
    );
    expect(readJsonLines(log).length).toBe(seen.length); // nothing more reached the server
    expect(await everythingShown(stateDir, gw.stderr())).not.toContain(SECRET);
  });

  it("a secret removed while the gateway runs: credential_missing naming the command that stores it for this URL", async () => {
    const SECRET = "removed-while-running-token-77d1";
    const { gw, stateDir, log, seen } = await servedWithVaultHeader("Authorization", SECRET);
    const rm = await runCli(["vault", "rm", "remote-mcp-token"], { stateDir, env: passphraseEnv() });
    expect(rm.code, rm.stderr).toBe(0);
    const refused = (await gw.client
      .callTool({ name: "echo", arguments: { message: "y" } })
      .catch((e) => e)) as { code: number; message: string; data: { retry: string } };
    expect(refused.code).toBe(-32059);
    // the retry names the command that stores it for this URL's host, for this state directory
    expect(refused.data.retry).toMatch(
      new RegExp(
        `^ask a human to run 'portcullis vault set remote-mcp-token --host 127\\.0\\.0\\.1:\\d+ --state-dir ${stateDir}' and 'portcullis unlock --state-dir ${stateDir}', then retry$`,
      ),
    );
    expect(readJsonLines(log).length).toBe(seen.length); // nothing more reached the server
  });

  it("a server entry with both url and command, or url with identity, is refused naming the key", async () => {
    const dir = tempDir("portcullis-cfg-");
    const file = join(dir, "portcullis.json");
    writeFileSync(
      file,
      JSON.stringify({ servers: { r: { url: "https://example.com/mcp", command: "node" } } }),
    );
    const both = await runCli(["run", "--config", file, "r"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('servers.r.url and "command" are both set');
    writeFileSync(
      file,
      JSON.stringify({ servers: { r: { url: "https://example.com/mcp", identity: { include: ["*.js"] } } } }),
    );
    const include = await runCli(["run", "--config", file, "r"]);
    expect(include.code).toBe(2);
    expect(include.stderr).toContain('servers.r.identity does not apply to a server reached by "url"');
  });

  it("two headers whose names differ only in case are refused naming the key, never the values", async () => {
    const dir = tempDir("portcullis-cfg-");
    const file = join(dir, "portcullis.json");
    writeFileSync(
      file,
      JSON.stringify({
        servers: {
          r: {
            url: "https://example.com/mcp",
            headers: { "X-Api-Key": "first-value-7f3a", "x-api-key": { secret: "remote-token" } },
          },
        },
      }),
    );
    const r = await runCli(["run", "--config", file, "r"], { stateDir: newStateDir() });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis run: ${file}: servers.r.headers.x-api-key is the same header as "X-Api-Key" (header names are case-insensitive); keep one.\n`,
    );
    expect(r.stderr).not.toContain("first-value-7f3a");
  });
});
