// A passphrase, or a secret's value, typed at a terminal that sends bytes that are not UTF-8 (one
// set to Latin-1 sends "é" as the byte E9) is refused, as a passphrase file holding such bytes is
// (not-utf8.test.ts): each was read as U+FFFD, so the command went on with another passphrase than
// the one typed (one that any other such bytes of the same count also give: init would have made
// the keyring under it), or stored another value than the one typed. UTF-8 typed there, "é"
// included, is read as typed.
// The real CLI on a pseudo-terminal of its own (test/helpers/terminal.ts).
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";
import { runAtTerminal } from "../helpers/terminal.js";

/** typed, with Enter; at least 8 characters, as init asks of a passphrase */
const TYPED = "d\u00e9j\u00e0 vu au caf\u00e9\r";
const LATIN1 = Buffer.from(TYPED, "latin1");
const UTF8 = Buffer.from(TYPED, "utf8");
const TEST_KDF = { PORTCULLIS_INSECURE_TEST_KDF: "1" };
const refusal = (what: string) =>
  `the ${what} typed is not UTF-8 text (the terminal sent a byte that is not UTF-8: is it set to another encoding?), so it would be read as another ${what} than the one typed; set the terminal's encoding to UTF-8 and type it again`;

describe("a line typed at a terminal that is not UTF-8", () => {
  it("a passphrase is refused, exit 2, and not tried against the keyring", async () => {
    const stateDir = newStateDir();
    const r = await runAtTerminal(
      ["audit", "sessions", "--state-dir", stateDir],
      [{ await: "Passphrase: ", send: LATIN1 }],
      { env: TEST_KDF },
    );
    expect(r.output).toContain(`portcullis audit sessions: ${refusal("passphrase")}.`);
    expect(r.output).not.toContain("wrong passphrase");
    expect(r.code).toBe(2);
  });

  it("init's new passphrase is refused before it is asked again, and no keyring is made", async () => {
    const stateDir = join(newStateDir(), "new");
    const r = await runAtTerminal(
      ["init", "--state-dir", stateDir],
      [{ await: "New passphrase: ", send: LATIN1 }],
      // taken, it was asked again, and nothing is typed: the command would wait for ever
      { env: TEST_KDF, timeoutS: 8 },
    );
    expect(r.output).toContain(refusal("passphrase"));
    expect(r.output).not.toContain("Repeat the passphrase");
    expect(r.code).toBe(2);
    expect((await runCli(["vault", "list"], { stateDir })).code).toBe(2); // nothing there
  });

  it("a secret's value is refused and nothing is stored", async () => {
    const stateDir = newStateDir();
    const env = { ...passphraseEnv() };
    const r = await runAtTerminal(
      ["vault", "set", "API_KEY", "--deliver", "env", "--state-dir", stateDir],
      [{ await: "Value of API_KEY: ", send: LATIN1 }],
      { env },
    );
    expect(r.output).toContain(refusal("value"));
    expect(r.code).toBe(2);
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    expect(JSON.parse(list.stdout).secrets).toEqual([]);
  });

  it("UTF-8 typed there is read as typed: a passphrase with an é makes a keyring it opens", async () => {
    const stateDir = join(newStateDir(), "new");
    const init = await runAtTerminal(
      ["init", "--state-dir", stateDir],
      [
        { await: "New passphrase: ", send: UTF8 },
        { await: "Repeat the passphrase: ", send: UTF8 },
      ],
      { env: TEST_KDF },
    );
    expect(init.code, init.output).toBe(0);
    const wrong = await runAtTerminal(
      ["audit", "sessions", "--state-dir", stateDir],
      [{ await: "Passphrase: ", send: Buffer.from(`${TEST_PASSPHRASE}\r`) }],
      { env: TEST_KDF },
    );
    expect(wrong.code, wrong.output).toBe(1);
    const right = await runAtTerminal(
      ["audit", "sessions", "--state-dir", stateDir],
      [{ await: "Passphrase: ", send: UTF8 }],
      { env: TEST_KDF },
    );
    expect(right.code, right.output).toBe(0);
  });
});
