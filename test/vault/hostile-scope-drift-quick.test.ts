// An environment credential rotated twice in quick succession (within one second, the grain of
// the vault socket file's time), or its socket file's time set back by another process of the
// user: the gateway's check that the vault still holds the value the server was spawned with
// (src/vault/port.ts) is keyed by the holder's generation, which must change with every `vault
// set` and `vault rm`, whatever the socket file's time says. Each rotation is noticed: a call
// after one that left another value is refused credential_missing, and a call after one that
// put the spawned value back runs. Real gateway, real vault, real CLI.
import { statSync, utimesSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { holderSocketPath } from "../../src/vault/holder.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret, vaultedProject } from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const OLD = "quick-drift-old-value-2b7e";
const NEW = "quick-drift-new-value-91ac";
const NEWER = "quick-drift-newer-value-d05f";

const refused = { data: { error: "credential_missing", scope: "api-token" } };

describe("rotations in quick succession under a live session grant", () => {
  it("each is noticed, within one second and with the socket file's time set back", async () => {
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
    await gw.client.listTools();
    const first = gw.client.callTool({ name: "describe", arguments: {} });
    const asked = await nextStoredRequest(stateDir, new Set());
    await decideByCli(stateDir, "approve", asked.request, "--for", "session");
    expect((await first).isError).toBeFalsy();
    const describe_ = () => gw.client.callTool({ name: "describe", arguments: {} });
    const sock = holderSocketPath(stateDir);
    const mark = () => statSync(sock).mtimeMs / 1000;

    // two rotations one after the other, no call between: the second is what counts
    await storeSecret(stateDir, "api-token", NEW, "--deliver", "env");
    await storeSecret(stateDir, "api-token", NEWER, "--deliver", "env");
    await expect(describe_()).rejects.toMatchObject(refused);
    // the spawned value stored back: the vault holds what the server holds, the grant covers it
    await storeSecret(stateDir, "api-token", OLD, "--deliver", "env");
    expect((await describe_()).isError).toBeFalsy();
    // and once more away, with the socket file's time set back to what it was before: refused
    const before = mark();
    await storeSecret(stateDir, "api-token", NEW, "--deliver", "env");
    utimesSync(sock, before, before);
    await expect(describe_()).rejects.toMatchObject(refused);
    // back again, the file's time set to the one the refused check saw: runs
    const refusedAt = mark();
    await storeSecret(stateDir, "api-token", OLD, "--deliver", "env");
    utimesSync(sock, refusedAt, refusedAt);
    expect((await describe_()).isError).toBeFalsy();
    // removed and stored again with another value within the same second: refused
    expect((await runCli(["vault", "rm", "api-token"], { stateDir, env: pass })).code).toBe(0);
    await storeSecret(stateDir, "api-token", NEWER, "--deliver", "env");
    await expect(describe_()).rejects.toMatchObject(refused);
  }, 120_000);
});
