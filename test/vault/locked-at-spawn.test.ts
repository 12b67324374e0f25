// A server whose credentials are delivered in its environment gets them only when it is spawned.
// A host usually starts its servers before anyone runs `portcullis unlock`: the server then holds
// placeholders, and an unlock does not change its environment. What the gateway says (its status
// line) and what the agent is told (`vault_locked`'s retry) must say that the server has to start
// again, not only that the vault must be unlocked. A credential delivered over HTTP is released per
// call, so there an unlock is enough, and the retry says only that. Real gateway, real vault.
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli, startGateway } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret } from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/**
 * A gateway in front of the inventory fixture whose credential is `credential`, its secret stored
 * with `policy`; `unlocked`: the vault is unlocked before the server is spawned.
 */
async function vaultedGateway(credential: unknown, policy: string[], unlocked = false) {
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  const config = {
    servers: {
      inventory: {
        command: NODE,
        args: ["dist/server.js"],
        env: project.env,
        credentials: { INVENTORY_API_KEY: credential },
        approval: { default: "none" },
      },
    },
  };
  writeFileSync(join(project.dir, "portcullis.json"), JSON.stringify(config, null, 2));
  const stateDir = newStateDir();
  await storeSecret(stateDir, "inventory-api-staging", VALUE, ...policy);
  if (unlocked) {
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
  }
  const gw = await startGateway({ args: ["inventory"], cwd: project.dir, stateDir });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return { gw, project, stateDir };
}

/** A gateway whose server was spawned while the vault was locked, and its first call's refusal. */
async function lockedGateway(credential: unknown, policy: string[]) {
  const { gw, project, stateDir } = await vaultedGateway(credential, policy);
  const refused = await gw.client
    .callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } })
    .then(
      () => null,
      (e: { code?: number; data?: { error?: string; retry?: string } }) => e,
    );
  return { gw, refused, project, stateDir };
}

const VALUE = "locked-at-spawn-value-91c3";

describe("a server started while the vault is locked", () => {
  it("env delivery: the status line and the agent's retry say the server must start again after the unlock", async () => {
    const { gw, refused, stateDir } = await lockedGateway("inventory-api-staging", ["--deliver", "env"]);
    const line = await gw.waitForStderr(/vault locked: inventory-api-staging withheld/);
    expect(line).toContain(
      `the server started with placeholders, which it keeps after an unlock (environment credentials are given only when it starts): run 'portcullis unlock --state-dir ${stateDir}', then have your MCP client reconnect the server`,
    );
    expect(refused).toMatchObject({ code: -32056, data: { error: "vault_locked" } });
    expect(refused!.data!.retry).toBe(
      `ask a human to run 'portcullis unlock --state-dir ${stateDir}' and then to have the MCP client reconnect this server (inventory-api-staging is put in its environment only when it starts: a server started while the vault was locked keeps the placeholder), then retry`,
    );
  });

  it("env delivery, unlocked since: a call is refused, not run with the placeholder, until the server starts again", async () => {
    const { gw, project, stateDir } = await lockedGateway("inventory-api-staging", ["--deliver", "env"]);
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    // the vault holds the secret now, but this server process holds the placeholder: let through,
    // the call would run without the credential while its records name it as used
    await expect(
      gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } }),
    ).rejects.toMatchObject({
      code: -32059,
      data: {
        error: "credential_missing",
        scope: "inventory-api-staging",
        reason: expect.stringContaining(
          "the server process started without it (the vault was locked when it started)",
        ),
        retry:
          "ask a human to have the MCP client reconnect this server (environment credentials are given only when it starts), then retry",
      },
    });
    expect(project.records()).toHaveLength(0);
    // the client reconnects the server: a new gateway, a new process, spawned unlocked
    await gw.close();
    const again = await startGateway({ args: ["inventory"], cwd: project.dir, stateDir });
    cleanup.push(() => again.close());
    await again.client.listTools();
    const r = await again.client.callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } });
    expect(r.isError).toBeFalsy();
    const held = createHash("sha256").update(VALUE).digest("hex").slice(0, 12);
    expect(project.records().map((c) => c.credential)).toEqual([held]);
  });

  it("env delivery, a server started unlocked and the vault locked since: the retry asks only for an unlock, which is all it takes", async () => {
    // Before, every vault_locked of an environment credential said to reconnect the server, also
    // when the running process held the value (it was spawned unlocked).
    const { gw, project, stateDir } = await vaultedGateway(
      "inventory-api-staging",
      ["--deliver", "env"],
      true,
    );
    const call = () => gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } });
    expect((await call()).isError).toBeFalsy();
    expect((await runCli(["lock"], { stateDir })).code).toBe(0);
    await expect(call()).rejects.toMatchObject({
      code: -32056,
      data: {
        error: "vault_locked",
        retry: `ask a human to run 'portcullis unlock --state-dir ${stateDir}', then retry`,
      },
    });
    // as the retry says: the unlock alone, and the same process runs the call with the value
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    expect((await call()).isError).toBeFalsy();
    const held = createHash("sha256").update(VALUE).digest("hex").slice(0, 12);
    expect(project.records().map((c) => c.credential)).toEqual([held, held]);
  });

  it("HTTP delivery: released per call, so an unlock is all the retry asks for", async () => {
    const { refused, stateDir } = await lockedGateway(
      { secret: "inventory-api-staging", hosts: ["api.example.com"] },
      ["--host", "api.example.com"],
    );
    expect(refused).toMatchObject({
      code: -32056,
      data: {
        error: "vault_locked",
        retry: `ask a human to run 'portcullis unlock --state-dir ${stateDir}', then retry`,
      },
    });
  });
});
