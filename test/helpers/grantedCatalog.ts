// A gateway before the catalog fixture (one label, onExpand as given) with what a test of session
// grants does at the terminal: a call approved for the session by the real CLI, a call that must
// be covered (no request made), a re-list of other definitions (the gateway's and the client's),
// and the fixture's record of the calls it received. For test/gateway/grant-fingerprint-*.test.ts.
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import type { ExpectStatic, OnTestFinishedHandler } from "vitest";
import { decideByCli, nextStoredRequest, storedPending } from "./approvals.js";
import type { ToolDef } from "./catalog.js";
import { onExpandGateway } from "./onExpandGateway.js";
import { teardownOf } from "./teardown.js";

/** A tool with every field a definition may carry: what a grant is signed for. */
export const DEPLOY: ToolDef = {
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
/** A second tool, for what a change to DEPLOY does to the run's other grants. */
export const STATUS: ToolDef = {
  name: "status",
  description: "Read the build status.",
  inputSchema: { type: "object", properties: {} },
};

/** The gateway, and the terminal's and the server's side of it, for one test (torn down with it). */
export async function grantedCatalogGateway(
  onExpand: "run" | "tool",
  tools: ToolDef[],
  expect: ExpectStatic,
  onTestFinished: (fn: OnTestFinishedHandler) => void,
) {
  const { stateDir, cat, gw } = await onExpandGateway(
    "site",
    ["--approval-timeout", "30000"],
    onExpand,
    tools,
    teardownOf(onTestFinished),
  );
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
