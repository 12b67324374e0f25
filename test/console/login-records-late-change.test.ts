// The console's login takes the passphrase, so it records late a passphrase change `portcullis
// passphrase` left unrecorded (the store's write lock held elsewhere at its record), as every
// command that takes the passphrase does; docs/security.md said so, but a login with a keyring
// that has its approver key only checked the pins, and the change stayed out of the chain (doctor
// kept reporting it). Real console process, a real SQLite lock holder, login over HTTP.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, waitFor } from "../helpers/files.js";
import { holdStoreLock } from "../helpers/lock.js";
import { changeByCli } from "../helpers/passphraseChange.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";
import { httpLogin, startConsoleProcess } from "./helpers.js";

const NEW = "changed while the store was held";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("the console's login after a passphrase change left unrecorded", () => {
  it("records the change late", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const mark = join(stateDir, "keyring.json.change-unrecorded");
    const lock = await holdStoreLock(stateDir);
    const changed = await changeByCli(stateDir, TEST_PASSPHRASE, NEW, [], {
      PORTCULLIS_BUSY_TIMEOUT_MS: "200",
    });
    await lock.release();
    expect(changed.code, changed.stderr).toBe(0);
    expect(existsSync(mark)).toBe(true);

    const console = await startConsoleProcess(stateDir);
    cleanup.push(() => console.stop());
    await httpLogin(console.url, NEW);
    // the login's answer came after its proof, which records before it answers
    expect(existsSync(mark)).toBe(false);
    // and says so on its stderr: another pipe than the answer's, read once the line is there
    await waitFor(
      () => console.output().includes("recorded now, late (passphrase_changed, record"),
      10_000,
      "the console's line saying the change is recorded late",
    );
  });
});
