// What keeps a session grant and what revives none: a whitespace-only description change and a
// narrowed output schema keep it; under onExpand "tool" the approved definition put back before
// any call covers again (the grant never ended); under "run" a change to _meta alone ends every
// grant of the run, and the definitions put back revive none. Real gateway, the catalog fixture,
// approvals by the real CLI. The fields one at a time: grant-fingerprint-fields.test.ts.
import { describe, it } from "vitest";
import { DEPLOY, grantedCatalogGateway as gateway, STATUS } from "../helpers/grantedCatalog.js";

describe.concurrent("a session grant kept, or ended for good", () => {
  it('onExpand "tool": a whitespace-only description change and a narrowed output schema keep the grant (the contrast)', async ({
    expect,
    onTestFinished,
  }) => {
    const { approved, covered, relist, received } = await gateway("tool", [DEPLOY], expect, onTestFinished);
    await approved("deploy", { branch: "a" });
    await relist([{ ...DEPLOY, description: "Deploy a branch  to the preview site.\n" }]);
    await covered("deploy", { branch: "b" });
    await relist([
      {
        ...DEPLOY,
        outputSchema: {
          type: "object",
          required: ["url"],
          properties: { url: { type: "string", maxLength: 200 } },
          additionalProperties: false,
        },
      },
    ]);
    await covered("deploy", { branch: "c" });
    expect(received()).toEqual(["deploy:a", "deploy:b", "deploy:c"]);
  });

  it('onExpand "tool": the approved definition put back before any call covers again (the grant never ended)', async ({
    expect,
    onTestFinished,
  }) => {
    const { approved, covered, relist, received } = await gateway("tool", [DEPLOY], expect, onTestFinished);
    await approved("deploy", { branch: "a" });
    await relist([{ ...DEPLOY, _meta: { "example.com/target": "production" } }]);
    await relist([DEPLOY]);
    await covered("deploy", { branch: "b" });
    expect(received()).toEqual(["deploy:a", "deploy:b"]);
  });

  it('onExpand "run": a change to _meta alone ends every grant of the run; the old definitions put back revive none', async ({
    expect,
    onTestFinished,
  }) => {
    const { approved, covered, relist, received } = await gateway(
      "run",
      [DEPLOY, STATUS],
      expect,
      onTestFinished,
    );
    await approved("deploy", { branch: "a" });
    await approved("status", {});
    await covered("status", {});
    await relist([{ ...DEPLOY, _meta: { "example.com/target": "production" } }, STATUS]);
    await relist([DEPLOY, STATUS]);
    // both tools are exactly as approved again, in the same epoch: each call asks a human
    await approved("status", {});
    await approved("deploy", { branch: "b" });
    expect(received()).toEqual(["deploy:a", "status:", "status:", "status:", "deploy:b"]);
  });
});
