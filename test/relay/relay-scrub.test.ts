// An answer relayed as written (a method the gateway neither guards nor records) is still
// scrubbed: the scrubber sees the server's bytes before the id is spliced back.
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { formsOf } from "../../src/vault/valueForms.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret, vaultedProject } from "../vault/helpers.js";

const SECRET = 'Rl9"q/+ é\\key-4Zü=w17';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a relayed answer", () => {
  it("reaches the client without the released value", async () => {
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    await storeSecret(stateDir, "api-token", SECRET, "--deliver", "env");
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    const project = vaultedProject({
      credentials: { API_TOKEN: { secret: "api-token", deliver: "env" } },
      approval: { default: "none" },
    });
    cleanup.push(() => project.cleanup());
    const gw = await startGateway({ args: ["vaulted"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());

    const r = await gw.client.request({ method: "vaulted/value", params: {} }, ResultSchema.passthrough());
    expect(r.note).toBe("relayed");
    expect(r.value).toBe("[redacted:api-token]");
    const text = JSON.stringify(r);
    expect(formsOf(SECRET).filter((f) => text.includes(f))).toEqual([]);
  });
});
