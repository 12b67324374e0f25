// Under `run --listen` every HTTP session launches its own server process, and each spawn takes
// the environment credentials the vault gives at that moment. What one session's process was
// given belongs to that process: another session's later spawn must not stand for it. Here
// session A's server starts while the vault is locked (a placeholder), the vault is unlocked,
// session B's server starts with the secret, and then A's worker is replaced under the same
// watcher process (same environment, new epoch): A's gateway must still know that its process
// holds a placeholder, and refuse the call that needs it, rather than take B's spawn for its own
// and run the call without the credential while its records name it as used. Real processes:
// `run --listen` from a portcullis.json, v1 SDK HTTP clients, the watcher fixture, a real vault.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { completeLines } from "../helpers/completeLines.js";
import { waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { INVENTORY_KEY, makeProject } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { type Listener, startListener } from "../http/listen.js";
import { storeSecret } from "./helpers.js";

let cleanup: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function session(l: Listener, name: string) {
  const client = new Client({ name, version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(l.url), {
    requestInit: { headers: { authorization: `Bearer ${l.token}` } },
  });
  await client.connect(transport);
  cleanup.push(() => client.close().catch(() => {}));
  return client;
}

const adjust = (client: Client) =>
  client.callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } }).then(
    (r) => ({ result: r, error: null }),
    (e: { code?: number; data?: { error?: string; reason?: string } }) => ({ result: null, error: e }),
  );

describe("run --listen: what each session's server process was spawned with", () => {
  it("a session's worker replaced after another session's spawn keeps its own spawn's credentials: still refused, not run with the placeholder", async () => {
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const starts = join(project.dir, "starts.jsonl");
    const config = {
      servers: {
        inventory: {
          command: NODE,
          args: [FIXTURES.watcher, "--", NODE, "dist/server.js"],
          env: { ...project.env, FIXTURE_STARTS: starts },
          credentials: { INVENTORY_API_KEY: "inventory-api-staging" },
          approval: { default: "none" },
        },
      },
    };
    writeFileSync(join(project.dir, "portcullis.json"), JSON.stringify(config, null, 2));
    const stateDir = newStateDir();
    await storeSecret(stateDir, "inventory-api-staging", INVENTORY_KEY, "--deliver", "env");
    const l = await startListener([], {
      configFile: join(project.dir, "portcullis.json"),
      label: "inventory",
      stateDir,
      args: ["--listen", "127.0.0.1:0"],
    });
    cleanup.push(() => l.close());
    const startsSeen = () =>
      completeLines(readFileSync(starts, "utf8"))
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { watcher: number; pid: number });

    // A: spawned while the vault is locked
    const a = await session(l, "session-a");
    await a.listTools();
    expect((await adjust(a)).error).toMatchObject({ data: { error: "vault_locked" } });

    // unlocked; B: spawned with the secret, and its call runs
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    cleanup.push(() => runCli(["lock"], { stateDir }));
    const b = await session(l, "session-b");
    await b.listTools();
    const bCall = await adjust(b);
    expect(bCall.error).toBeNull();

    // A's worker replaced under its watcher: same process, same environment, a new epoch
    const watcherOfA = startsSeen()[0]!.watcher;
    expect(startsSeen()[1]!.watcher).not.toBe(watcherOfA);
    const replacedBefore = l.stderr().split("running server replaced").length;
    process.kill(watcherOfA, "SIGHUP");
    await waitFor(() => startsSeen().length >= 3, 20_000);
    await a.listTools(); // a request makes the gateway look for a replaced worker, if its poll has not
    await waitFor(() => l.stderr().split("running server replaced").length > replacedBefore, 20_000);

    const aCall = await adjust(a);
    expect(aCall.result).toBeNull();
    expect(aCall.error).toMatchObject({
      data: {
        error: "credential_missing",
        reason: expect.stringContaining(
          "the server process started without it (the vault was locked when it started)",
        ),
      },
    });
    // and the one call A's server ran was none (its refusals never reached it); B's ran once
    expect(project.records().filter((r) => r.tool === "adjust_inventory")).toHaveLength(1);
  }, 120_000);
});
