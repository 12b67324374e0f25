// A mistake in run's HTTP front flags (--listen, --listen-max-sessions, --listen-idle-timeout,
// --no-auth) is said before the keyring is looked for, as every other flag of run is. Checked
// after, `run --listen 8080 -- node server.js` in a state directory not set up yet was answered
// "no keyring …: portcullis init", and running init only led to the typo. The real CLI, against a
// state directory that does not exist and one that is empty; nothing is created in either.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";

const SERVER = ["--", "node", "server.js"];

const cases: [string[], string][] = [
  [["--listen", "8080"], "portcullis run: --listen must be HOST:PORT, e.g. 127.0.0.1:8765 or [::1]:8765.\n"],
  [
    ["--listen", "127.0.0.1:08080"],
    "portcullis run: --listen has a port written with a leading zero; write the port without it.\n",
  ],
  [
    ["--listen", "127.0.0.1:8765", "--listen-max-sessions", "0"],
    "portcullis run: --listen-max-sessions must be a whole number of at least 1.\n",
  ],
  [
    ["--listen", "127.0.0.1:8765", "--listen-idle-timeout", "5"],
    "portcullis run: --listen-idle-timeout must be a whole number of milliseconds of at least 1000.\n",
  ],
  [["--no-auth"], "portcullis run: --no-auth needs --listen HOST:PORT.\n"],
  [
    ["--listen", "0.0.0.0:8765", "--no-auth"],
    "portcullis run: --no-auth is allowed only on a loopback address (127.0.0.0/8, ::1), not 0.0.0.0: anyone who can reach it could use the server.\n",
  ],
];

describe("run: the HTTP front's flags before the keyring", () => {
  it("names the flag at fault, exit 2, in a state directory missing or empty; creates nothing", async () => {
    const parent = tempDir("portcullis-run-listen-usage-");
    const empty = tempDir("portcullis-run-listen-usage-empty-");
    for (const stateDir of [join(parent, "never"), empty])
      for (const [flags, said] of cases) {
        const r = await runCli(["run", "--state-dir", stateDir, ...flags, ...SERVER], { noTerminal: true });
        expect(r.stderr, `${stateDir}: ${flags.join(" ")}`).toBe(said);
        expect(r.code).toBe(2);
      }
    expect(existsSync(join(parent, "never"))).toBe(false);
    expect(readdirSync(empty)).toEqual([]);
  });

  it("well-formed front flags there still meet the missing keyring", async () => {
    const stateDir = join(tempDir("portcullis-run-listen-usage-"), "never");
    const r = await runCli(["run", "--state-dir", stateDir, "--listen", "127.0.0.1:8765", ...SERVER], {
      noTerminal: true,
    });
    expect(r.stderr).toContain(`portcullis run: no keyring in ${stateDir}`);
    expect(r.code).toBe(2);
  });
});
