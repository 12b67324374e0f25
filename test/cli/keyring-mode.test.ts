// A keyring.json others may read (mode 644, as `cp` from a backup into a new state directory
// under the usual umask leaves it) is made 0600 again by whichever command reads it, and said once
// on stderr: its keys are sealed under the passphrase, but a copy lets whoever took it guess at
// the passphrase offline. Only `doctor` looked at the state directory's mode, and nothing at the
// keyring's: a gateway, vault list or doctor itself went on over a keyring others could read,
// without a word. As the store's files and the generated listen token, it is portcullis's own
// file, so its mode is fixed rather than the command refused. The real CLI.
import { chmodSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

const mode = (path: string) => statSync(path).mode & 0o777;
const warned = (path: string, was: string) =>
  `portcullis: warning: ${path} had mode ${was}: other users who can reach it may read it, and a copy lets them guess at the passphrase offline; it is yours alone now (mode 600).\n`;

describe("a keyring others may read", () => {
  it("is made 0600 by the first command that reads it, saying so once: vault list, doctor, a gateway", async () => {
    for (const [args, was] of [
      [["vault", "list"], 0o644],
      [["doctor", "--json"], 0o640],
      [["run", "--label", "echo", "--", ...fixtureCommand("echo")], 0o604],
    ] as const) {
      const stateDir = newStateDir();
      const keyring = join(stateDir, "keyring.json");
      chmodSync(keyring, was);
      const text = readFileSync(keyring, "utf8");
      const first = await runCli([...args], { stateDir, input: "" });
      expect(first.code, `${args[0]}: ${first.stderr}`).toBe(0);
      expect(first.stderr, args[0]).toContain(warned(keyring, was.toString(8).padStart(3, "0")));
      expect(mode(keyring), args[0]).toBe(0o600);
      // the file is as it was, and nothing of it is printed
      expect(readFileSync(keyring, "utf8")).toBe(text);
      const { kdf } = JSON.parse(text) as { kdf: { salt: string } };
      expect(first.stdout + first.stderr).not.toContain(kdf.salt);
      if (args[0] === "doctor") expect(JSON.parse(first.stdout).ok).toBe(true);
      const again = await runCli([...args], { stateDir, input: "" });
      expect(again.stderr, args[0]).not.toContain("had mode");
    }
  });
});
