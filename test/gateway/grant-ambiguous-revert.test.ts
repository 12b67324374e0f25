// A session grant of `deploy`, then the server lists `deploy` twice (the approved definition and
// another), so the name is withheld, then lists the approved definition alone again. Under
// onExpand "tool" the grant stops covering the tool while it is ambiguous, as for any change of its
// definition: put back before any call of it was refused, the grant covers it again; a call refused
// as ambiguous meanwhile ends it ("superseded"), and a human is asked again. Before, that refusal
// (tool_not_in_catalog) left the grant live, and the definition put back was covered by it. Under
// "run" the change itself ends the run's grants. Real gateway, the catalog fixture (re-listed from
// its tool file), approvals by the real CLI.
import { describe, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import type { ToolDef } from "../helpers/catalog.js";
import { DEPLOY, grantedCatalogGateway as gateway } from "../helpers/grantedCatalog.js";

/** the same name, another definition: anywhere, and it deletes */
const DEPLOY_ANYWHERE: ToolDef = {
  ...DEPLOY,
  description: "Deploy a branch anywhere; also deletes the old one.",
  inputSchema: {
    type: "object",
    required: ["branch"],
    properties: { branch: { type: "string" }, wipe: { type: "boolean" } },
  },
};

/** why each of the run's session grants ended (null: live), oldest first */
function grantEnds(stateDir: string): (string | null)[] {
  const db = openStore(stateDir);
  try {
    return db
      .prepare("SELECT ended_reason FROM grants WHERE mode = 'session' ORDER BY issued_at")
      .pluck()
      .all() as (string | null)[];
  } finally {
    db.close();
  }
}

describe.concurrent("a session grant across a name listed twice, then once again", () => {
  it('onExpand "tool": a call refused while the name is ambiguous ends the grant; listed alone again, a human is asked', async ({
    expect,
    onTestFinished,
  }) => {
    const { stateDir, approved, call, relist, received } = await gateway(
      "tool",
      [DEPLOY],
      expect,
      onTestFinished,
    );
    await approved("deploy", { branch: "a" });
    await relist([DEPLOY, DEPLOY_ANYWHERE]);
    const err = await call("deploy", { branch: "never" }).catch((e) => e);
    expect(err).toMatchObject({
      code: -32055,
      data: { error: "tool_not_in_catalog", listed: 2, definitions: 2 },
    });
    expect(grantEnds(stateDir)).toEqual([
      "superseded: tool deploy listed more than once with different definitions",
    ]);
    await relist([DEPLOY]);
    await approved("deploy", { branch: "b" });
    expect(received()).toEqual(["deploy:a", "deploy:b"]);
  });

  it('onExpand "tool": with no call while it is ambiguous, the approved definition listed alone again is covered', async ({
    expect,
    onTestFinished,
  }) => {
    const { stateDir, approved, covered, relist, received } = await gateway(
      "tool",
      [DEPLOY],
      expect,
      onTestFinished,
    );
    await approved("deploy", { branch: "a" });
    await relist([DEPLOY, DEPLOY_ANYWHERE]);
    await relist([DEPLOY]);
    await covered("deploy", { branch: "b" });
    expect(received()).toEqual(["deploy:a", "deploy:b"]);
    expect(grantEnds(stateDir)).toEqual([null]);
  });

  it('onExpand "run": the name becoming ambiguous ends the grant; listed alone again, a human is asked', async ({
    expect,
    onTestFinished,
  }) => {
    const { stateDir, approved, relist, received } = await gateway("run", [DEPLOY], expect, onTestFinished);
    await approved("deploy", { branch: "a" });
    await relist([DEPLOY, DEPLOY_ANYWHERE]);
    await relist([DEPLOY]);
    await approved("deploy", { branch: "b" });
    expect(received()).toEqual(["deploy:a", "deploy:b"]);
    expect(grantEnds(stateDir)[0]).toMatch(/^revoked: catalog revision \d+ expands authority$/);
  });
});
