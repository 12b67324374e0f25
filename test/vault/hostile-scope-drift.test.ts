// A session grant names its credential scopes by name. What a human approved under a scope is the
// secret the vault held under that name; an environment-delivered secret is put in the server's
// environment once, when it is spawned. Rotated (`vault set` again) or removed and stored again
// while the grant is live, the running server still holds the value the vault no longer does:
// such a call must not run as if it used the scope's credential, as a call of a server spawned
// with a placeholder does not (test/vault/locked-at-spawn.test.ts). Real gateway, real vault,
// real CLI; the server's environment is read from /proc.
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret, vaultedProject } from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const OLD = "scope-drift-old-value-7c41";
const NEW = "scope-drift-new-value-e93d";

/** Whether the process holds `value` in its environment (a same-user read of /proc). */
function environHolds(pid: number, value: string): boolean {
  return readFileSync(`/proc/${pid}/environ`).toString("utf8").split("\0").includes(`API_TOKEN=${value}`);
}

/** A gateway whose server holds OLD (env delivery), and a session grant of `describe` under it. */
async function grantedUnderOld() {
  const stateDir = newStateDir();
  const pass = passphraseEnv();
  cleanup.push(async () => {
    await runCli(["lock"], { stateDir });
  });
  await storeSecret(stateDir, "api-token", OLD, "--deliver", "env");
  expect((await runCli(["unlock"], { stateDir, env: pass })).code).toBe(0);
  const project = vaultedProject({
    credentials: { API_TOKEN: { secret: "api-token", deliver: "env" } },
    approval: { default: "session" },
  });
  cleanup.push(() => project.cleanup());
  const gw = await startGateway({ args: ["vaulted"], cwd: project.dir, stateDir });
  cleanup.push(() => gw.close());
  const pid = Number((await gw.waitForStderr(/pid=(\d+)/)).match(/pid=(\d+)/)![1]);
  await gw.client.listTools();
  expect(environHolds(pid, OLD)).toBe(true);
  const seen = new Set<string>();
  const first = gw.client.callTool({ name: "describe", arguments: {} });
  const asked = await nextStoredRequest(stateDir, seen);
  await decideByCli(stateDir, "approve", asked.request, "--for", "session");
  expect((await first).isError).toBeFalsy();
  // covered by the grant: no new request
  expect((await gw.client.callTool({ name: "describe", arguments: {} })).isError).toBeFalsy();
  return { stateDir, pass, gw, pid };
}

describe("a session grant and an environment credential changed under its scope", () => {
  it("rotated (vault set again) while the grant is live: the next call is not run with the retired value", async () => {
    const { stateDir, gw, pid } = await grantedUnderOld();
    await storeSecret(stateDir, "api-token", NEW, "--deliver", "env");
    // the running server keeps what it was spawned with
    expect(environHolds(pid, OLD)).toBe(true);
    expect(environHolds(pid, NEW)).toBe(false);
    await expect(gw.client.callTool({ name: "describe", arguments: {} })).rejects.toMatchObject({
      data: {
        error: "credential_missing",
        scope: "api-token",
        retry: expect.stringContaining("reconnect this server"),
      },
    });
  }, 90_000);

  it("locked and unlocked again, the same value: the grant still covers the next call", async () => {
    const { stateDir, pass, gw, pid } = await grantedUnderOld();
    expect((await runCli(["lock"], { stateDir })).code).toBe(0);
    expect((await runCli(["unlock"], { stateDir, env: pass })).code).toBe(0);
    // another secret stored meanwhile changes nothing of this one
    await storeSecret(stateDir, "unrelated", "unrelated-value-5a0b", "--deliver", "env");
    expect(environHolds(pid, OLD)).toBe(true);
    expect((await gw.client.callTool({ name: "describe", arguments: {} })).isError).toBeFalsy();
  }, 90_000);

  it("removed, then stored again while the grant is live: the removed value is not used again", async () => {
    const { stateDir, pass, gw, pid } = await grantedUnderOld();
    expect((await runCli(["vault", "rm", "api-token"], { stateDir, env: pass })).code).toBe(0);
    await expect(gw.client.callTool({ name: "describe", arguments: {} })).rejects.toMatchObject({
      data: { error: "credential_missing", scope: "api-token" },
    });
    await storeSecret(stateDir, "api-token", NEW, "--deliver", "env");
    expect(environHolds(pid, OLD)).toBe(true);
    await expect(gw.client.callTool({ name: "describe", arguments: {} })).rejects.toMatchObject({
      data: { error: "credential_missing", scope: "api-token" },
    });
  }, 90_000);
});
