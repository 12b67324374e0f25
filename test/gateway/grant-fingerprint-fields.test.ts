// A session grant names the tool with the fingerprint of its whole definition: a re-list that
// changes only a field the gateway does not read for validation (outputSchema, _meta, execution,
// icons, an annotation hint) stops the grant covering the tool, and putting the exact approved
// definition back does not revive a grant that a refusal (onExpand "tool") or the catalog change
// itself (onExpand "run") ended. Real gateway, the catalog fixture serving the definitions from a
// file, approvals given by the real CLI with the passphrase.
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, type ExpectStatic, it, type OnTestFinishedHandler } from "vitest";
import { decideByCli, nextStoredRequest, storedPending } from "../helpers/approvals.js";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

const DEPLOY: ToolDef = {
  name: "deploy",
  description: "Deploy a branch to the preview site.",
  inputSchema: { type: "object", required: ["branch"], properties: { branch: { type: "string" } } },
  outputSchema: {
    type: "object",
    required: ["url"],
    properties: { url: { type: "string" } },
    additionalProperties: false,
  },
  annotations: { readOnlyHint: true, title: "Deploy" },
  execution: { taskSupport: "forbidden" },
  icons: [{ src: "https://example.com/deploy.png", mimeType: "image/png" }],
  _meta: { "example.com/target": "preview" },
};
const STATUS: ToolDef = {
  name: "status",
  description: "Read the build status.",
  inputSchema: { type: "object", properties: {} },
};

/** Each change touches one field only; the grant for DEPLOY must not cover the result. */
const EXPANDING: [string, ToolDef][] = [
  ["outputSchema widened (additionalProperties dropped)", { ...DEPLOY, outputSchema: { type: "object" } }],
  ["_meta changed", { ...DEPLOY, _meta: { "example.com/target": "production" } }],
  ["execution changed", { ...DEPLOY, execution: { taskSupport: "optional" } }],
  ["icons changed", { ...DEPLOY, icons: [{ src: "https://example.com/other.png", mimeType: "image/png" }] }],
  ["readOnlyHint true → false", { ...DEPLOY, annotations: { readOnlyHint: false, title: "Deploy" } }],
];

async function gateway(
  onExpand: "run" | "tool",
  tools: ToolDef[],
  expect: ExpectStatic,
  onTestFinished: (fn: OnTestFinishedHandler) => void,
) {
  const stateDir = newStateDir();
  const cat = makeCatalog(tools);
  const gw = await startGateway({
    args: [
      "--label",
      "site",
      "--approval-timeout",
      "30000",
      "--on-expand",
      onExpand,
      "--",
      ...fixtureCommand("catalog"),
    ],
    env: cat.env,
    stateDir,
  });
  onTestFinished(() => cat.cleanup());
  onTestFinished(() => gw.close());
  await gw.client.listTools();
  const seen = new Set<string>();
  /** a tools/call without the SDK's output check (the fixture answers with text only) */
  const call = (name: string, args: Record<string, unknown>) =>
    gw.client.request({ method: "tools/call", params: { name, arguments: args } }, CallToolResultSchema);
  /** a call that must ask a human: its request is approved for the session, and it is answered */
  const approved = async (name: string, args: Record<string, unknown>) => {
    const answer = call(name, args);
    const req = await nextStoredRequest(stateDir, seen);
    expect(req.tool).toBe(name);
    await decideByCli(stateDir, "approve", req.request, "--for", "session");
    await answer;
  };
  /** a call that must be covered: answered, and no request made for it */
  const covered = async (name: string, args: Record<string, unknown>) => {
    await call(name, args);
    expect(storedPending(stateDir).filter((p) => !seen.has(p.request))).toEqual([]);
  };
  /** the server lists `next` instead; the gateway has re-listed it, and so has the client */
  const relist = async (next: ToolDef[]) => {
    const from = gw.received().length;
    cat.write(next);
    await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
    await gw.client.listTools();
  };
  const received = () => cat.records().map((r) => `${r.tool}:${String(r.args.branch ?? "")}`);
  return { stateDir, gw, call, approved, covered, relist, received };
}

// One gateway per change (run side by side): a generation's re-lists that each find a new revision
// are paced after the third (src/gateway/relistPace.ts), and each change here is two revisions.
describe.concurrent("a session grant is bound to the whole tool definition", () => {
  for (const [what, changed] of EXPANDING) {
    it(`onExpand "tool": ${what} stops the grant covering the tool; the exact approved definition put back asks again`, async ({
      expect,
      onTestFinished,
    }) => {
      const { approved, covered, call, relist, received } = await gateway(
        "tool",
        [DEPLOY],
        expect,
        onTestFinished,
      );
      await approved("deploy", { branch: "a" });
      await covered("deploy", { branch: "b" });
      await relist([changed]);
      const err = await call("deploy", { branch: "never" }).catch((e) => e);
      expect(err).toMatchObject({ code: -32051, data: { reason: "tool authority expanded" } });
      expect(received()).toEqual(["deploy:a", "deploy:b"]);
      // the refusal ended the grant (superseded): the definition it was signed for, put back
      // exactly, is asked about again
      await relist([DEPLOY]);
      await approved("deploy", { branch: "c" });
      expect(received()).toEqual(["deploy:a", "deploy:b", "deploy:c"]);
    });
  }

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
