// `portcullis unlock --for` runs out while a gateway serves: the holder locks by itself, and the
// next call of a tool that uses credentials is refused vault_locked (-32056) naming its scopes and
// what to run, never forwarded; a tool with `credentials: []` still runs; and a new unlock is seen
// at the next call. Real holder, real gateway, real server.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret, vaultedProject } from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("unlock --for runs out under a serving gateway", () => {
  it("the next call that needs a credential is refused vault_locked, not forwarded; one that needs none runs; a new unlock is seen at the next call", async () => {
    const stateDir = newStateDir();
    const env = passphraseEnv();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    await storeSecret(stateDir, "api-token", "api-token-value-0001", "--deliver", "env");
    const project = vaultedProject({
      credentials: { API_TOKEN: { secret: "api-token", deliver: "env" } },
      tools: { reveal: { credentials: ["api-token"] }, status: { credentials: [] } },
      approval: { default: "none" },
    });
    cleanup.push(() => project.cleanup());
    // unlocked once the gateway serves: the --for window starts when nothing else waits
    const gw = await startGateway({ args: ["vaulted"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const sock = join(stateDir, "vault.sock");
    expect((await runCli(["unlock", "--for", "2s"], { stateDir, env })).code).toBe(0);
    await waitFor(() => !existsSync(sock), 20_000, "the holder to run out and lock");

    await expect(gw.client.callTool({ name: "reveal", arguments: { form: "raw" } })).rejects.toMatchObject({
      code: -32056,
      data: {
        error: "vault_locked",
        scopes: ["api-token"],
        retry: expect.stringContaining("portcullis unlock"),
      },
    });
    expect((await gw.client.callTool({ name: "status", arguments: {} })).isError).toBeFalsy();
    // refused before the intent: nothing of reveal was recorded as called
    const called = (await auditEvents(stateDir)).filter((e) => e.type === "tool_called").map((e) => e.tool);
    expect(called).toEqual(["status"]);

    // unlocked again (no --for): the lock is read at each call, not at the gateway's start. The
    // server, spawned while the vault was locked, holds a placeholder: credential_missing now,
    // which is the reconnect the vault_locked retry spoke of (test/vault/locked-at-spawn.test.ts)
    expect((await runCli(["unlock"], { stateDir, env })).code).toBe(0);
    await expect(gw.client.callTool({ name: "reveal", arguments: { form: "raw" } })).rejects.toMatchObject({
      code: -32059,
      data: { error: "credential_missing", scope: "api-token" },
    });
  }, 90_000);
});
