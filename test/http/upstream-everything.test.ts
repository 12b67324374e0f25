// `run --url` against @modelcontextprotocol/server-everything in its own Streamable HTTP mode
// (`index.js streamableHttp`, PORT from the environment): list and call through the guard, with
// a human approval given through the real CLI. It keeps an event store, so its SSE streams open
// with priming events.
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, pending } from "../helpers/approvals.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import { type EverythingHttp, everythingOverHttp } from "./everythingHttp.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function everything(): Promise<EverythingHttp> {
  const server = await everythingOverHttp();
  cleanup.push(() => server.kill());
  return server;
}

describe("run --url against server-everything (Streamable HTTP)", () => {
  it("lists and calls through the guard; the first call of the run waits for a human", async () => {
    const upstream = await everything();
    const stateDir = newStateDir();
    const gw = await startGateway({
      args: ["--url", upstream.url, "--label", "everything", "--approval-timeout", "30000"],
      stateDir,
    });
    cleanup.push(() => gw.close());
    const tools = (await gw.client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain("echo");

    const call = gw.client.callTool({ name: "echo", arguments: { message: "through the guard" } });
    const req = await nextStoredRequest(stateDir);
    expect(req.tool).toBe("echo");
    expect(req.serverLabel).toBe("everything");
    await decideByCli(stateDir, "approve", req.request, "--for", "session");
    const result = (await call) as { content: { text: string }[] };
    expect(result.content[0]!.text).toContain("through the guard");
    // the session grant covers the next call: no new request
    await gw.client.callTool({ name: "echo", arguments: { message: "again" } });
    expect(await pending(stateDir)).toEqual([]);

    const status = JSON.parse((await runCli(["status", "--json", "--state-dir", stateDir])).stdout)
      .gateways[0];
    expect(status.record.remote).toMatchObject({ url: upstream.url, certificateChainSha256: null });
    expect(status.record.remote.serverInfo.name).toMatch(/everything/i);
    // server-everything keeps an event store: each SSE stream opens with a priming event (an id
    // and empty data), which is not a message and not worth a warning
    expect(gw.stderr()).not.toContain("not JSON");
  });
});
