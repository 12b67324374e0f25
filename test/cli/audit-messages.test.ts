// What `portcullis audit …` says, as a user reads it: every sentence starts with the command's
// prefix once ("portcullis audit: …"), never twice. The real CLI against a state directory with a
// keyring.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

describe("audit's sentences", () => {
  it("name the command once: no 'portcullis audit: portcullis audit …' or 'unknown audit subcommand'", async () => {
    const stateDir = newStateDir();
    const said = async (args: string[]) => {
      const r = await runCli(["audit", ...args], { stateDir });
      expect(r.code, r.stderr).toBe(2);
      return r.stderr;
    };
    expect(await said(["show"])).toBe("portcullis audit: show takes one record number (SEQ ≥ 1).\n");
    expect(await said(["show", "x"])).toBe("portcullis audit: show takes one record number (SEQ ≥ 1).\n");
    expect(await said(["bogus"])).toBe(
      'portcullis audit: unknown subcommand "bogus"; see portcullis audit --help.\n',
    );
    for (const args of [["show"], ["bogus"], ["verify", "--nope"], ["export", "x"]]) {
      const text = await said(args);
      expect(text.match(/audit/g)?.length, text).toBeLessThanOrEqual(2); // the prefix and the help's
      expect(text).not.toMatch(/portcullis audit: (portcullis )?audit\b/);
    }
  });
});
