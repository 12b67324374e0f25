// A second `portcullis console --port N` while a console runs for the state directory on another
// port: the port asked for is not given, so it is said (where the running one is, its pid, what to
// do), exit 2, not "already running" with exit 0 as if N were served. The same port, or no
// --port, still prints the running console's address, exit 0. Real console processes.
import { afterEach, describe, expect, it } from "vitest";
import { type RunningConsole, startConsoleProcess } from "../console/helpers.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

let running: RunningConsole | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

describe("console --port N while a console runs", () => {
  it("on another port: exit 2 naming where it runs and what to do; on the same port, or none: its address", async () => {
    const stateDir = newStateDir();
    running = await startConsoleProcess(stateDir);
    const port = Number(new URL(running.url).port);
    const other = port === 65535 ? port - 1 : port + 1;

    const r = await runCli(["console", "--no-open", "--port", String(other)], { stateDir });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      `portcullis console: a console is already running for ${stateDir} at ${running.url} (pid ${running.pid}), ` +
        `not on port ${other}; there is one console per state directory: use that one, or stop it ` +
        `(kill ${running.pid}) and run 'portcullis console --port ${other} --state-dir ${stateDir}' again.\n`,
    );

    for (const args of [["--port", String(port)], []]) {
      const same = await runCli(["console", "--no-open", ...args], { stateDir });
      expect(same.code, same.stderr).toBe(0);
      expect(same.stdout).toMatch(new RegExp(`^the console is already running at ${running.url}/`));
    }
  });
});
