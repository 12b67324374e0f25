// `portcullis egress LABEL` treats a label as `catalog` does: one no server has run under in
// this state directory is refused (exit 2, one sentence), so a typo is never reported as a
// server that contacted nothing; a server that ran without egress is "no egress recorded", exit 0.
// A real gateway runs the echo fixture (no credentials, so no proxy) to make its label known.
import { describe, expect, it } from "vitest";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

describe("egress LABEL", () => {
  it("an unknown label is exit 2 naming it; a server that ran and contacted nothing is exit 0", async () => {
    const stateDir = newStateDir();
    const gw = await startGateway({ args: ["--label", "quiet", "--", ...fixtureCommand("echo")], stateDir });
    try {
      await gw.client.listTools();
    } finally {
      await gw.close();
    }
    for (const json of [[], ["--json"]]) {
      const unknown = await runCli(["egress", "nope", ...json], { stateDir });
      expect(unknown.code).toBe(2);
      expect(unknown.stdout).toBe("");
      expect(unknown.stderr).toMatch(
        /^portcullis egress: no server has run under that label in this state directory \(the name given is not repeated, in case it is a secret typed in the wrong place\); labels that have run: \S+\.\n$/,
      );
    }
    const catalog = await runCli(["catalog", "show", "nope"], { stateDir });
    expect(catalog.code).toBe(2);
    const quiet = await runCli(["egress", "quiet"], { stateDir });
    expect(quiet.code, quiet.stderr).toBe(0);
    // a `run -- COMMAND` gateway never has an egress proxy (nor a flag that gives it one):
    // the line says so, and how to get one, not only portcullis.json's keys it never read
    expect(quiet.stdout).toBe(
      "no egress recorded for quiet (an egress proxy runs only for a server run from portcullis.json " +
        `('portcullis run LABEL') whose entry has credentials delivered over HTTP, or "egress"; ` +
        "one run from the command line ('portcullis run -- COMMAND', as wrap writes host entries) never has one, " +
        `and no run flag gives it one: to record its egress, move it into portcullis.json with "egress": "record" ` +
        `(or its "credentials") and run it by its label)\n`,
    );
    const quietJson = await runCli(["egress", "quiet", "--json"], { stateDir });
    expect(quietJson.code, quietJson.stderr).toBe(0);
    expect(JSON.parse(quietJson.stdout)).toEqual({ epochs: [] });
  });
});
