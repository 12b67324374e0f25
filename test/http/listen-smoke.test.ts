import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { fixtureCommand } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";

let l: Listener | null = null;
afterEach(async () => {
  await l?.close();
  l = null;
});

describe("smoke", () => {
  it("v1 client lists and calls", async () => {
    l = await startListener([process.execPath, "test/fixtures/servers/conformance.mjs"], {
      args: ["--approval", "none"],
    });
    const client = new Client({ name: "t", version: "1" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(l.url), {
        requestInit: { headers: { authorization: `Bearer ${l.token}` } },
      }),
    );
    const tools = await client.listTools();
    expect(tools.tools.length).toBeGreaterThan(3);
    const r = await client.callTool({ name: "test_simple_text", arguments: {} });
    expect(JSON.stringify(r)).toContain("text");
    await client.close();
  });
});
