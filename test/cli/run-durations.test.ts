// run's durations in ms (--hold-timeout, --approval-timeout, --request-ttl) become Node timers
// and a request's expiry date. A timer longer than 2^31-1 ms fires after 1 ms (a call's wait
// that re-arms itself then spins, flooding the log with TimeoutOverflowWarning), and an expiry
// past the Date range made every guarded call an internal error ("Invalid time value"). So such a
// value is refused before anything starts, naming the flag, as are `0x10`, `1e3` and an empty
// value, which Number() read as numbers. 0 stays a value: no wait at all. The real CLI.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

describe("run's durations in ms", () => {
  it.each([
    ["--approval-timeout", "3000000000"],
    ["--hold-timeout", "99999999999999"],
    ["--request-ttl", "1e20"],
    ["--request-ttl", "0x10"],
    ["--hold-timeout=", ""],
  ])("%s %s is refused before the server starts, naming the flag", async (flag, value) => {
    const args = flag.endsWith("=") ? [flag] : [flag, value];
    const r = await runCli(["run", "--label", "durations", ...args, "--", ...fixtureCommand("echo")], {
      stateDir: newStateDir(),
      input: "",
    });
    const name = flag.replace(/=$/, "");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `portcullis run: ${name} must be a whole number of milliseconds from 0 to 2147483647.\n`,
    );
  });

  it("the largest one and 0 are taken", async () => {
    for (const value of ["2147483647", "0"]) {
      const r = await runCli(
        ["run", "--label", "durations", "--request-ttl", value, "--", ...fixtureCommand("echo")],
        { stateDir: newStateDir(), input: "" },
      );
      // the client's input ends at once: the gateway starts, then ends in order
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toMatch(/must be a whole number/);
    }
  });
});
