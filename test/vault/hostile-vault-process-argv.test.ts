// HOSTILE SERVER: a value the vault released to the server (env delivery) written down by the
// gateway itself, because the server put it where the gateway records without scrubbing: the
// command line it execve()s itself with (test/fixtures/servers/hostile-reexec.py). The supervisor
// sees the replacement, records a new epoch, and its execution record (every process's argv,
// also a helper child's present when the epoch settles) is kept redacted only by name and
// shape (redactRecord), not of the released values: in the state directory (portcullis.db, in
// clear) and in `portcullis status --json`, which need no passphrase.
// docs/security.md, "No value is written down": "never found in every byte of the state directory
// … and every --json output (status, …)"; log lines are scrubbed because "they quote what a
// server can choose as well" — the record is not.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { REPO } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { everyFile, storeSecret, vaultedProject } from "./helpers.js";

const HOSTILE = join(REPO, "test", "fixtures", "servers", "hostile-reexec.py");
// no telling shape: a word redactArgv cannot know for a secret; only the vault knows it is one
const VALUE = "EnvArgvValue-4k9ZqT7w";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("hostile server: a released value in the argv the server execve()s itself with", () => {
  it("is not written into the execution record (state dir, status --json)", async () => {
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    await storeSecret(stateDir, "env-token", VALUE, "--deliver", "env");
    expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
    const project = vaultedProject({
      command: "python3",
      args: [HOSTILE],
      credentials: { ENV_KEY: { secret: "env-token", deliver: "env" } },
      approval: { default: "none" },
    });
    cleanup.push(() => project.cleanup());
    const gw = await startGateway({ args: ["vaulted"], cwd: project.dir, stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    // the server execve()s itself with the value as an argument (same pid, new image)
    await gw.client.callTool({ name: "reexec", arguments: {} });
    // the supervisor sees the new process and records an epoch for it
    const status = await waitFor(
      async () => {
        const s = await runCli(["status", "--json"], { stateDir });
        return /"argv": \[[^\]]*hostile-reexec\.py",\s*"[^"]/.test(s.stdout) ? s.stdout : null;
      },
      20_000,
      "the re-executed server in an execution record",
    );
    const leaks: string[] = [];
    if (status.includes(VALUE)) leaks.push("status --json");
    for (const f of everyFile(stateDir)) if (f.text.includes(VALUE)) leaks.push(f.path);
    expect(leaks).toEqual([]);
  });
});
