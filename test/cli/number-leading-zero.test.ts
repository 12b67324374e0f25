// A number written with a leading zero is refused by every numeric flag, naming the flag and not
// repeating the value, as a port with one is (port-leading-zero.test.ts): `--hold-timeout 0100`
// was 100 ms and `--listen-max-sessions 016` 16 sessions, where a reader of the line (or a tool
// that reads 0-prefixed numbers as octal) takes them for other numbers. A lone 0 is still 0. The
// real CLI; nothing is launched or listened on: each line also holds a refusal that comes after
// the number's (`--no-auth` on an address that is not loopback; a console's state directory
// without a keyring), so that a number taken as before ends the command there instead.
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

const NOT_LOOPBACK = ["--listen", "0.0.0.0:0", "--no-auth"];
const said = (command: string, flag: string) =>
  `portcullis ${command}: --${flag} is written with a leading zero; write the number without it.\n`;

describe("a number with a leading zero", () => {
  it("run's durations, --max-message-bytes and the listen flags refuse it, naming the flag", async () => {
    const stateDir = newStateDir();
    for (const [flag, value] of [
      ["hold-timeout", "0100"],
      ["approval-timeout", "050000"],
      ["request-ttl", "00"],
      ["max-message-bytes", "01048576"],
      ["listen-max-sessions", "016"],
      ["listen-idle-timeout", "01000"],
    ] as const) {
      const r = await runCli(["run", `--${flag}`, value, ...NOT_LOOPBACK, "--", ...fixtureCommand("echo")], {
        stateDir,
      });
      expect(r.code, flag).toBe(2);
      expect(r.stderr, flag).toBe(said("run", flag));
      expect(r.stderr).not.toContain(value);
    }
    // 0 itself is a number, refused here only for what the flag allows after it
    const zero = await runCli(
      ["run", "--hold-timeout", "0", ...NOT_LOOPBACK, "--", ...fixtureCommand("echo")],
      {
        stateDir,
      },
    );
    expect(zero.stderr).toMatch(/^portcullis run: --no-auth is allowed only on a loopback address/);
  });

  it("console's --idle-timeout and --proof-window refuse it, naming the flag", async () => {
    const noKeyring = tempDir("portcullis-state-");
    for (const [flag, value] of [
      ["idle-timeout", "0900"],
      ["proof-window", "060"],
    ] as const) {
      const r = await runCli(["console", "--no-open", `--${flag}`, value], { stateDir: noKeyring });
      expect(r.code, flag).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr, flag).toBe(said("console", flag));
    }
  });

  it("unlock's --for refuses it in any of its numbers, before the passphrase or the state directory", async () => {
    // 010m was 10 minutes; the duration's numbers are read like every other flag's
    const noKeyring = tempDir("portcullis-state-");
    for (const value of ["010m", "01h", "1h05m", "00090s"]) {
      const r = await runCli(["unlock", "--for", value], { stateDir: noKeyring });
      expect(r.code, value).toBe(2);
      expect(r.stderr, value).toBe(said("unlock", "for"));
    }
    // without a leading zero the duration is taken, and the command goes on to the state directory
    const plain = await runCli(["unlock", "--for", "10m"], { stateDir: noKeyring });
    expect(plain.code).toBe(2);
    expect(plain.stderr).toMatch(/portcullis init/);
  });
});
