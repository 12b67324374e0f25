// An empty or relative HOME (`HOME= portcullis init`, a service manager's `HOME=.`) made the
// default state directory `.local/state/portcullis` relative to whatever folder a command ran in:
// `init` set up a store there, a gateway started in another folder found another (or none), and
// the `--state-dir` advice printed was relative too. Such a HOME is now passed over, as a relative
// XDG variable is, for the user's entry in the password database. The real CLI, run as `nobody`
// (home /nonexistent) so that no real home's state directory is read or made: root only.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { NOBODY, ROOT_ON_LINUX, unprivilegedUser } from "../helpers/otherUser.js";

describe.skipIf(!ROOT_ON_LINUX)("a HOME that is not an absolute path", () => {
  it("is passed over for the user's own home: nothing is made under the working folder", async () => {
    const cwd = tempDir("portcullis-home-relative-");
    const secrets = tempDir("portcullis-home-relative-pass-");
    const passphrase = join(secrets, "passphrase");
    writeFileSync(passphrase, "correct horse battery\n", { mode: 0o600 });
    mkdirSync(join(cwd, "rel"));
    const as = unprivilegedUser([cwd, secrets]);
    if (as === null) return; // the checkout is not readable by nobody
    expect(as.spawn.uid).toBe(NOBODY);
    const home = "/nonexistent/.local/state/portcullis";
    for (const given of ["", "rel", "."]) {
      const env = {
        HOME: given,
        PORTCULLIS_PASSPHRASE_FILE: passphrase,
        PORTCULLIS_INSECURE_TEST_KDF: "1",
      };
      const options = { cwd, env, noTerminal: true, ...as.spawn };
      const status = await runCli(["status"], options);
      expect(status.stderr, `HOME=${JSON.stringify(given)}`).toContain(`no state directory at ${home}:`);
      expect(status.stderr).not.toContain("--state-dir .local");
      expect(status.code).toBe(2);
      // init makes the state directory it names: never one under the working folder
      const init = await runCli(["init"], options);
      expect(init.code, init.stderr).toBe(2);
      expect(init.stderr).toContain(home);
      expect(existsSync(join(cwd, ".local"))).toBe(false);
      expect(existsSync(join(cwd, "rel", ".local"))).toBe(false);
    }
  });
});
