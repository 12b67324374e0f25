// Notices (not failures) on stderr name their command and subcommand, as the README's "Commands"
// promises of every line written there. They did not:
// - approve and deny wrote the approver key's pin ("approver key … pinned in the audit chain") and
//   a passphrase change recorded late as "portcullis: …";
// - vault set's note of a short value, and vault list's warning of a portcullis.json that does not
//   load, named the group alone ("portcullis vault: …");
// - `approve --next` on a terminal answered a word that is no choice with "portcullis: …".
// The real CLI over pipes (and under `script` for the terminal), real gateways.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { removeDir } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { holdStoreLock } from "../helpers/lock.js";
import { changeByCli, withPassphrase } from "../helpers/passphraseChange.js";
import { CLI } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { hasScript, heldWipe } from "../helpers/scriptTerminal.js";
import { newKeyringOnlyStateDir, newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const NEW = "changed while the store was held";

describe("notices name their command", () => {
  it("approve's pin of the approver key, deny's late record of a passphrase change", async () => {
    // a keyring with no pin yet: the first approve pins its approver key, saying so
    const stateDir = newKeyringOnlyStateDir();
    cleanup.push(() => removeDir(stateDir));
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, [], { stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const first = gw.client.callTool({ name: "read_status", arguments: {} });
    const one = await nextStoredRequest(stateDir);
    const approved = await decideByCli(stateDir, "approve", one.request, "--for", "call"); // the next call asks again
    expect(approved.stderr).toMatch(
      /^portcullis approve: approver key [0-9a-f]{32} pinned in the audit chain \(record \d+\)\n/,
    );
    await first;

    // a passphrase change that could not be recorded (the store's write lock held elsewhere)
    // leaves its mark; the next deny records it late, saying so
    const lock = await holdStoreLock(stateDir);
    const changed = await changeByCli(stateDir, TEST_PASSPHRASE, NEW, [], {
      PORTCULLIS_BUSY_TIMEOUT_MS: "200",
    });
    await lock.release();
    expect(changed.code, changed.stderr).toBe(0);
    const mark = join(stateDir, "keyring.json.change-unrecorded");
    expect(existsSync(mark)).toBe(true);
    const second = gw.client.callTool({ name: "read_status", arguments: {} });
    second.catch(() => {}); // refused as denied: awaited below
    const two = await nextStoredRequest(stateDir, new Set([one.request]));
    const denied = await runCli(["deny", two.request], { stateDir, env: withPassphrase(NEW) });
    expect(denied.code, denied.stderr).toBe(0);
    expect(denied.stderr).toMatch(
      /^portcullis deny: the keyring's passphrase was changed by .*: recorded now, late \(passphrase_changed, record \d+\)\n/,
    );
    expect(existsSync(mark)).toBe(false);
    await expect(second).rejects.toThrow(/A human denied this call/);
  }, 30_000);

  it("vault set's note of a short value", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const set = await runCli(["vault", "set", "tok", "--deliver", "env", "--from-stdin"], {
      stateDir,
      env: passphraseEnv(),
      input: "short\n",
    });
    expect(set.code, set.stderr).toBe(0);
    expect(set.stderr).toMatch(/^portcullis vault set: note: a value of under \d+ characters is scrubbed/);
    expect(set.stdout + set.stderr).not.toContain("short\n");
  });

  it.runIf(hasScript)(
    "approve --next on a terminal: an answer that is no choice",
    async () => {
      const { gw, req } = await heldWipe(cleanup, "portcullis-named-notice-");
      // typed "x" at the question, then "q" (left pending) at the question asked again
      const command = [process.execPath, CLI, "approve", "--next", "--state-dir", gw.stateDir!]
        .map((a) => `'${a}'`)
        .join(" ");
      const env: Record<string, string | undefined> = { ...process.env, PORTCULLIS_INSECURE_TEST_KDF: "1" };
      delete env.PORTCULLIS_PASSPHRASE_FILE;
      const child = spawn("script", ["-qec", command, "/dev/null"], { env });
      let screen = "";
      let asked = 0;
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        screen += d;
        const n = screen.split("[q] leave it pending: ").length - 1;
        if (n > asked) {
          asked = n;
          child.stdin.write(asked === 1 ? "x\r" : "q\r");
        }
      });
      // the screen read to its end, not only the exit: the last of it can still be in the pipe
      const { code } = await exitWithOutput(child, [child.stdout]);
      expect(code, screen).toBe(0);
      expect(screen).toContain('portcullis approve --next: "x" is not one of the choices');
      expect(screen).toContain(`left ${req.request} pending`);
    },
    30_000,
  );
});
