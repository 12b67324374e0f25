// A server rebuilt back to earlier code (revision A, then B, then A again) records a new catalog
// revision whose fingerprint an earlier one has. `catalog list` says which (text and --json
// `sameAs`), rather than leave two 64-digit fingerprints to be compared by eye.
import { describe, expect, it } from "vitest";
import { runCli, startGateway } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";

describe("catalog list: a revision equal to an earlier one", () => {
  it("names the earlier revision of the same catalog, in the text and in --json", async () => {
    const project = makeProject("A");
    const gw = await startGateway({
      args: [
        "--label",
        "inventory",
        "--approval",
        "none",
        "--on-change",
        "restart",
        "--",
        ...project.command,
      ],
      cwd: project.dir,
      env: project.env,
    });
    try {
      await gw.client.listTools();
      project.rebuild("B");
      await gw.waitForStderr(/tool catalog changed: revision 1 → 2/, 15_000);
      await gw.client.listTools();
      project.rebuild("A");
      await gw.waitForStderr(/tool catalog changed: revision 2 → 3/, 15_000);

      const json = await runCli(["catalog", "list", "inventory", "--json"], { stateDir: gw.stateDir });
      expect(json.code, json.stderr).toBe(0);
      const revs = (
        JSON.parse(json.stdout) as {
          revisions: { revision: number; fingerprint: string; sameAs: number | null }[];
        }
      ).revisions;
      expect(revs.map((r) => [r.revision, r.sameAs])).toEqual([
        [1, null],
        [2, null],
        [3, 1],
      ]);
      expect(revs[2]!.fingerprint).toBe(revs[0]!.fingerprint);

      const text = await runCli(["catalog", "list", "inventory"], { stateDir: gw.stateDir });
      const lines = text.stdout.trimEnd().split("\n");
      expect(lines).toHaveLength(3);
      expect(lines[1]).not.toContain("the same catalog");
      expect(lines[2]).toMatch(
        /^3 {2}sha256:[0-9a-f]{64} {2}4 tools {2}first seen \S+ {2}\(the same catalog as revision 1\)$/,
      );
    } finally {
      await gw.close();
      project.cleanup();
    }
  });
});
