// `portcullis passphrase` at a terminal (no passphrase files): the current passphrase, then the new
// one twice, all with echo off. A new passphrase typed differently twice is asked again, as init
// asks (src/cli/passphrase.ts); three times and the command gives up, exit 2, keyring.json byte for
// byte as before. Nothing typed is shown. The real CLI on a pseudo-terminal of its own
// (test/helpers/terminal.ts). Would catch: the confirmation not asked (the first entry taken as it
// is), a mismatch taken anyway, the keyring touched before the new passphrase is settled, echo on.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";
import { runAtTerminal, type TerminalStep } from "../helpers/terminal.js";

const TEST_KDF = { PORTCULLIS_INSECURE_TEST_KDF: "1" };
const NEW = "typed at the terminal 42";
const line = (s: string) => Buffer.from(`${s}\r`);

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.reverse()) c();
  cleanup = [];
});

/** The new passphrase's prompt and its repetition's, answered with `first` and `again`. */
function twice(first: string, again: string): TerminalStep[] {
  return [
    { await: "New passphrase: ", send: line(first) },
    { await: "Repeat the passphrase: ", send: line(again) },
  ];
}

describe("portcullis passphrase at a terminal", () => {
  it("a new passphrase typed differently three times: exit 2, nothing changed, nothing shown", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const was = readFileSync(join(stateDir, "keyring.json"), "utf8");
    const r = await runAtTerminal(
      ["passphrase", "--state-dir", stateDir],
      [
        { await: "Current passphrase: ", send: line(TEST_PASSPHRASE) },
        ...twice(NEW, `${NEW}x`),
        ...twice(NEW, `x${NEW}`),
        ...twice(NEW, "something else"),
      ],
      { env: TEST_KDF },
    );
    expect(r.output).toContain("the two passphrases differ; type it again");
    expect(r.output).toContain(
      "portcullis passphrase: the two passphrases differed 3 times; nothing was changed.",
    );
    expect(r.code).toBe(2);
    expect(r.output).not.toContain(NEW);
    expect(r.output).not.toContain(TEST_PASSPHRASE);
    expect(readFileSync(join(stateDir, "keyring.json"), "utf8")).toBe(was);
  });

  it("typed differently once, then alike: changed, and the new passphrase opens the keyring", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const r = await runAtTerminal(
      ["passphrase", "--state-dir", stateDir],
      [
        { await: "Current passphrase: ", send: line(TEST_PASSPHRASE) },
        ...twice(NEW, "a slip"),
        ...twice(NEW, NEW),
      ],
      { env: TEST_KDF },
    );
    expect(r.output).toContain("Passphrase changed: ");
    expect(r.code).toBe(0);
    expect(r.output).not.toContain(NEW);
    await expect(unlockKeyring(stateDir, NEW)).resolves.toBeDefined();
    await expect(unlockKeyring(stateDir, TEST_PASSPHRASE)).rejects.toThrow(/wrong passphrase/);
  });
});
