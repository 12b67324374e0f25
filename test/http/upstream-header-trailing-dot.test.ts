// `run --url https://api.example.com./mcp`: a fully qualified name, written with its trailing
// dot, is the same host as `api.example.com`. A vault header secret stored for that host is sent
// to it, as the holder already released it at each request (it reads the host so); `run`'s start
// check and `vault list` compared the URL's host with the dot kept and took it for another host.
// A different host, dot or no dot, is still refused. No DNS: the gateway runs with a preload
// that resolves the test's two names to 127.0.0.1, where an HTTPS fixture answers with a
// certificate for both.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readJsonLines, tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret } from "../vault/helpers.js";
import { makeTls, startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SECRET = "fqdn-header-token-6e3f";
const NAMES = ["api.example.com", "api.example.org"];

/** A --require preload: the test's names (with or without the dot) resolve to 127.0.0.1. */
function resolverPreload(): string {
  const file = join(tempDir("portcullis-dns-"), "resolve.cjs");
  writeFileSync(
    file,
    `const dns = require("node:dns");
const real = dns.lookup;
const ours = ${JSON.stringify(NAMES)};
dns.lookup = function (host, options, callback) {
  if (typeof options === "function") { callback = options; options = {}; }
  if (typeof options === "number") options = { family: options };
  if (ours.includes(String(host).toLowerCase().replace(/\\.$/, ""))) {
    const address = { address: "127.0.0.1", family: 4 };
    return process.nextTick(() => (options && options.all ? callback(null, [address]) : callback(null, "127.0.0.1", 4)));
  }
  return real.call(dns, host, options, callback);
};
`,
  );
  return file;
}

async function setUp() {
  const tls = await makeTls();
  await tls.renew(NAMES.map((value) => ({ type: "dns" as const, value })));
  const log = join(tempDir("portcullis-hdr-"), "headers.jsonl");
  const server = await startFixture({ FIXTURE_HEADER: "Authorization", FIXTURE_HEADER_LOG: log }, tls);
  cleanup.push(() => server.kill());
  const stateDir = newStateDir();
  cleanup.push(async () => {
    await runCli(["lock"], { stateDir });
  });
  // stored for the name without its dot, as `vault set` writes any host
  await storeSecret(
    stateDir,
    "remote-mcp-token",
    SECRET,
    "--deliver",
    "http",
    "--host",
    `api.example.com:${server.port}`,
  );
  expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
  const dir = tempDir("portcullis-cfg-");
  const file = join(dir, "portcullis.json");
  const config = (url: string) =>
    writeFileSync(
      file,
      JSON.stringify({
        servers: {
          remote: {
            url,
            headers: { Authorization: { secret: "remote-mcp-token", format: "Bearer {}" } },
            approval: { default: "none" },
          },
        },
      }),
    );
  const env = { NODE_EXTRA_CA_CERTS: tls.ca.caFile };
  return { server, stateDir, dir, file, config, env, log, preload: resolverPreload() };
}

/** What `vault list --json` says of the secret's one use: a mismatch sentence, or undefined. */
async function listedMismatch(stateDir: string, dir: string): Promise<string | undefined> {
  const list = await runCli(["vault", "list", "--json"], { stateDir, cwd: dir });
  expect(list.code, list.stderr).toBe(0);
  const secret = (
    JSON.parse(list.stdout) as { secrets: { name: string; usedBy: { mismatch?: string }[] }[] }
  ).secrets.find((s) => s.name === "remote-mcp-token")!;
  expect(secret.usedBy).toHaveLength(1);
  return secret.usedBy[0]!.mismatch;
}

describe("run --url with a trailing-dot host and a vault header secret", () => {
  it("is the same host: run starts and the header reaches it; vault list sees no mismatch; another host is still refused", async () => {
    const { server, stateDir, dir, file, config, env, log, preload } = await setUp();

    // the fully qualified spelling, in any case
    config(`https://API.Example.COM.:${server.port}/mcp`);
    expect(await listedMismatch(stateDir, dir)).toBeUndefined();
    const gw = await startGateway({
      args: ["--config", file, "remote"],
      stateDir,
      env,
      nodeFlags: ["--require", preload],
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const answer = (await gw.client.callTool({ name: "echo", arguments: { message: "x" } })) as {
      content: { text: string }[];
    };
    expect(answer.content[0]!.text).toBe("Echo: x");
    const seen = readJsonLines<{ value: string | null }>(log);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.every((s) => s.value === `Bearer ${SECRET}`)).toBe(true);
    await gw.close();
    const sent = seen.length;

    // another host, with its dot or without: refused at start, nothing sent to it
    for (const host of ["api.example.org.", "api.example.org"]) {
      config(`https://${host}:${server.port}/mcp`);
      expect(await listedMismatch(stateDir, dir)).toMatch(
        /releases it over HTTP only to api\.example\.com:\d+/,
      );
      const refused = await runCli(["run", "--config", file, "remote"], {
        stateDir,
        env,
        nodeFlags: ["--require", preload],
      });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(
        `sends the secret "remote-mcp-token" to ${host}:${server.port} (servers.remote.url), but the vault releases it over HTTP only to api.example.com:${server.port}`,
      );
    }
    expect(readJsonLines(log)).toHaveLength(sent);
    expect(gw.stderr()).not.toContain(SECRET);
  });
});
