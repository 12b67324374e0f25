// `unlock --for` counts by the wall clock, as `vault list` and the vault_unlocked record state its
// end. A holder's timer counts the process's monotonic time, which stands still while the machine
// sleeps: before, an `unlock --for 1h` followed by a night's suspend went on releasing the next
// morning for whatever was left of the hour, long after the time the human was shown. The holder
// here is a real one, started by a real `unlock`, with its view of the wall clock moved two hours
// on (test/fixtures/wall-clock-ahead.cjs) while its timer still has an hour to run.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { askHolder } from "../../src/vault/holder.js";
import { auditEvents } from "../helpers/approvals.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { REPO } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret } from "./helpers.js";

const VALUE = "wall-clock-value-5e4d3c2b1a";
const PRELOAD = join(REPO, "test", "fixtures", "wall-clock-ahead.cjs");

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("unlock --for by the wall clock", () => {
  it("a holder whose time has passed by the wall clock releases nothing and locks, though its timer has not run out", async () => {
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
    });
    const dir = tempDir("portcullis-clock-");
    cleanup.push(() => removeDir(dir));
    const ahead = join(dir, "ahead-ms");
    await storeSecret(stateDir, "api-token", VALUE, "--deliver", "env");
    const unlock = await runCli(["unlock", "--for", "1h"], {
      stateDir,
      env: { ...passphraseEnv(), NODE_OPTIONS: `--require ${PRELOAD}`, WALL_CLOCK_AHEAD: ahead },
    });
    expect(unlock.code, unlock.stderr).toBe(0);
    // unlocked, and releasing, while the wall clock is where it was
    const before = await askHolder(stateDir, { op: "release", scope: "api-token" });
    expect(before).toMatchObject({ ok: true, value: VALUE });

    // the machine slept two hours: the wall clock is past --for, the holder's timer is not
    writeFileSync(ahead, String(2 * 3600_000));
    const after = await askHolder(stateDir, { op: "release", scope: "api-token" });
    expect(after?.ok, "a release after --for has passed").not.toBe(true);
    expect(JSON.stringify(after)).not.toContain(VALUE);
    await waitFor(() => !existsSync(join(stateDir, "vault.sock")), 20_000, "the holder to lock");
    const listed = JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout);
    expect(listed.unlocked).toBe(false);
    // recorded as the end of its time, as when the timer runs out
    await waitFor(
      async () => (await auditEvents(stateDir)).some((e) => e.type === "vault_locked"),
      20_000,
      "the holder's vault_locked record",
    );
    const locked = (await auditEvents(stateDir)).filter((e) => e.type === "vault_locked");
    expect(locked.map((e) => e.reason)).toEqual(["expired"]);
  }, 60_000);
});
