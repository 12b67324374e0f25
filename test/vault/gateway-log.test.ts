// The gateway's own log lines hold no released value either, not only those of its message
// handling: what the process supervisor and the identity capture (and the remote link, the egress
// proxy, an HTTP front) say also quotes what a server can choose, such as the name of a file it
// wrote where its identity is watched. A real gateway, the value released to its server by the
// real vault (env delivery); the server exits at once, so supervision pauses until its files
// change; a link named after the value, to no file, then appears under the server's
// `identity.include`: the capture warns that it matches a link to no file, and the supervisor says
// which file changed as it starts the server again.
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { formsOf } from "../../src/vault/valueForms.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret, tracesOf, vaultedProject } from "./helpers.js";

// nothing the redaction of text takes for a credential on its own (an `sk-` key would be)
const VALUE = "pay7Qm2Xw9Lp4Rt8Zk3Hn6Bv1Cy5";
const MARK = "[redacted:payments]";

/** Any form of VALUE, or any 8 characters of it as written, found in `text`. */
const traces = (text: string): string[] => tracesOf(VALUE, text);

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("the gateway's own log holds no released value", () => {
  it("the supervisor and the identity capture naming a file the server named after the value: scrubbed", async () => {
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    await storeSecret(stateDir, "payments", VALUE, "--deliver", "env");
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    const project = vaultedProject({
      args: ["crash.mjs"],
      credentials: { API_TOKEN: { secret: "payments", deliver: "env" } },
      approval: { default: "none", tools: {} },
      identity: { include: ["data/**"] },
    });
    cleanup.push(() => project.cleanup());
    // a server that ends at once, every time: a crash loop, then a pause until its files change
    writeFileSync(join(project.dir, "crash.mjs"), "process.exit(3);\n");
    mkdirSync(join(project.dir, "data"));
    const gw = rawGateway({
      args: ["vaulted"],
      cwd: project.dir,
      stateDir,
      env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "20" },
    });
    cleanup.push(() => gw.close());
    await waitFor(() => /supervision paused/.test(gw.stderr()), 30_000, "the pause line");

    // what the server could have written, named after the value it was given
    symlinkSync(join(project.dir, "nowhere"), join(project.dir, "data", `${VALUE}.json`));
    await waitFor(
      () =>
        /changed; starting the server again/.test(gw.stderr()) &&
        /a symbolic link to a missing file/.test(gw.stderr()),
      30_000,
      "the lines naming the link",
    );
    expect(gw.stderr()).toContain(`data/${MARK}.json changed; starting the server again`);
    expect(gw.stderr()).toContain(
      `"data/**" matches data/${MARK}.json, a symbolic link to a missing file or to no regular file`,
    );
    expect(formsOf(VALUE).filter((f) => gw.stderr().includes(f))).toEqual([]);
    // the gateway's status lines are kept in the store too, and `status` shows them
    const status = await runCli(["status", "--json"], { stateDir });
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`data/${MARK}.json changed; starting the server again`);
    expect(formsOf(VALUE).filter((f) => status.stdout.includes(f))).toEqual([]);
  }, 90_000);

  it("a line the server wrote on stdout that is not a message, quoting a value cut short: dropped, quoted without it", async () => {
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    await storeSecret(stateDir, "payments", VALUE, "--deliver", "env");
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    const project = vaultedProject({
      credentials: { API_TOKEN: { secret: "payments", deliver: "env" } },
      approval: { default: "none", tools: {} },
    });
    cleanup.push(() => project.cleanup());
    const gw = await startGateway({ args: ["vaulted"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());
    // `using the key <its first 12 characters>…` on stdout, as console.log would write it
    await gw.client.callTool({ name: "whisper", arguments: { stdout: true } });
    const line = await gw.waitForStderr(/dropped an invalid message from the server/);
    expect(line).toContain(`using the key ${MARK}…`);
    expect(traces(gw.stderr())).toEqual([]);
  }, 60_000);
});
