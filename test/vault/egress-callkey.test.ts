// An egress record made on behalf of a call (a credential released for it) carries that call's
// `callKey`, as its tool_called and tool_result do: a reader ties the request to its call by the
// key, not by the client's id alone (which two calls may share). So does the credential_released.
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { newStateDir } from "../helpers/state.js";
import { approvedCall, egressKit, nodeServer, released, text } from "./egress-kit.js";

const k = egressKit();
afterEach(() => k.cleanupAll());

describe("egress records and their calls", () => {
  it("each egress record and credential release made for a call carries the callKey of that call's intent", async () => {
    const { plain, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, hosts);
    await k.storeHttpSecret(stateDir, ...hosts);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    const seen = new Set<string>();
    for (const path of ["/first", "/second"])
      expect(text(await approvedCall(gw, stateDir, "fetch_url", { url: `${plain.url}${path}` }, seen))).toBe(
        `200 upstream ok ${path}`,
      );
    expect(released(plain).map((x) => x.path)).toEqual(["/first", "/second"]);
    await gw.close();
    const events = await auditEvents(stateDir);
    const intents = events.filter((e) => e.type === "tool_called" && e.tool === "fetch_url");
    expect(intents).toHaveLength(2);
    const keys = intents.map((e) => e.callKey);
    expect(keys.every((key) => typeof key === "number")).toBe(true);
    expect(new Set(keys).size).toBe(2);
    const idText = (e: Record<string, unknown>) => e.requestIdText ?? JSON.stringify(e.requestId);
    for (const type of ["egress", "credential_released"]) {
      const forCalls = events.filter((e) => e.type === type && e.call !== null && e.call !== undefined);
      expect(forCalls.length, type).toBeGreaterThanOrEqual(2);
      for (const e of forCalls) {
        const intent = intents.find((i) => i.callKey === e.callKey);
        expect(intent, `${type} ${JSON.stringify(e)}`).toBeDefined();
        expect(e.call, type).toBe(idText(intent!));
      }
      // one for each call, each under its own key
      expect(new Set(forCalls.map((e) => e.callKey)), type).toEqual(new Set(keys));
    }
  });
});
