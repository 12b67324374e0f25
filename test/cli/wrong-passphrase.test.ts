// One rule for a wrong passphrase (README, "Exit codes"): every command that asks for the
// passphrase of an existing keyring exits 1 (a check failed) with one sentence saying the
// passphrase is wrong, and changes nothing. Real CLI processes, the passphrase from
// PORTCULLIS_PASSPHRASE_FILE; approve and deny against a real gateway's pending request. The
// README's list of those commands is read and must name each one run here: it left out
// `rotate-keys`, whose own help says a wrong current passphrase is exit 1.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest, pending } from "../helpers/approvals.js";
import { tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { readmeWrongPassphraseCommands } from "../helpers/passphraseCommands.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function wrongPassphraseEnv(): Record<string, string> {
  const file = join(tempDir("portcullis-wrong-pass-"), "passphrase");
  writeFileSync(file, "not the passphrase\n", { mode: 0o600 });
  return { ...passphraseEnv(), PORTCULLIS_PASSPHRASE_FILE: file };
}

describe("a wrong passphrase", () => {
  it("is exit 1 and one sentence saying so, from every command that asks for the passphrase", async () => {
    const stateDir = newStateDir();
    // a secret to remove, stored with the right passphrase
    const set = await runCli(["vault", "set", "api", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: passphraseEnv(),
      input: "a-value-of-the-secret",
    });
    expect(set.code, set.stderr).toBe(0);
    // a request waiting for a human, so that approve and deny get as far as the passphrase
    const gw = await startGateway({ args: ["--label", "asks", "--", ...fixtureCommand("echo")], stateDir });
    cleanup.push(() => gw.close());
    void gw.client.callTool({ name: "echo", arguments: { message: "hi" } }).catch(() => {});
    const req = await nextStoredRequest(stateDir);

    const commands: { args: string[]; input?: string }[] = [
      { args: ["unlock", "--for", "1m"] },
      { args: ["vault", "set", "other", "--from-stdin", "--deliver", "env"], input: "another-value" },
      { args: ["vault", "rm", "api"] },
      { args: ["approve", req.request, "--for", "session"] },
      { args: ["approve", "--next", "--for", "session"] },
      { args: ["deny", req.request, "--reason", "no"] },
      { args: ["deny", "--next"] },
      { args: ["audit", "sessions"] },
      { args: ["audit", "activity", "--json"] },
      { args: ["audit", "show", "1"] },
      { args: ["passphrase"] },
      { args: ["rotate-keys"] },
    ];
    const keyring = readFileSync(join(stateDir, "keyring.json"));
    for (const { args, input } of commands) {
      const r = await runCli(args, { stateDir, env: wrongPassphraseEnv(), input });
      const what = args.join(" ");
      expect(r.code, `${what}: ${r.stderr}`).toBe(1);
      expect(r.stderr, what).toMatch(
        /^portcullis[^\n]*: wrong passphrase: the keyring did not open[^\n]*\n$/,
      );
    }

    // nothing changed: the keyring, the secret is there, the other never stored, the request still pending
    expect(readFileSync(join(stateDir, "keyring.json")).equals(keyring)).toBe(true);
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    expect((JSON.parse(list.stdout).secrets as { name: string }[]).map((s) => s.name)).toEqual(["api"]);
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([req.request]);

    // the README names every command run here, and no other
    const named = (args: string[]) =>
      ["vault", "audit"].includes(args[0]!) ? args.slice(0, 2) : args.slice(0, 1);
    const run = new Set(commands.map(({ args }) => named(args).join(" ")));
    expect(readmeWrongPassphraseCommands().sort()).toEqual([...run].sort());

    // a keyring that cannot be used is no check that failed: exit 2, as from every command (README)
    writeFileSync(join(stateDir, "keyring.json"), "");
    for (const verb of ["approve", "deny"]) {
      const reach = verb === "approve" ? ["--for", "session"] : [];
      const r = await runCli([verb, req.request, ...reach], { stateDir, env: passphraseEnv() });
      expect(r.code, `${verb}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/keyring\.json is not a usable keyring: it is empty/);
    }
  });
});
