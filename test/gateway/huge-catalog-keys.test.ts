// A tool whose input schema names a property with a key of 8 MiB (a catalog may hold 32 MiB). Its
// path in a catalog diff is `inputSchema.properties["…"]`, and the diff read the name back with a
// regular expression whose `(?:[^"\\]|\\.)*` kept a backtracking entry per character: it threw
// RangeError ("Maximum call stack size exceeded"), so the revision that changed the property's
// default could not be recorded and the catalog was not served. Now the path is read by a loop.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { diffTool } from "../../src/catalog/index.js";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const KEY = `odd "key" ${"a".repeat(8 * 1024 * 1024)}`;

const tool = (mode: string): ToolDef => ({
  name: "report",
  description: "Make a report.",
  inputSchema: { type: "object", properties: { [KEY]: { type: "string", default: mode } } },
});

describe("a property key of 8 MiB", () => {
  it("a diff names the property (cut short) and sees its default change, shown redacted (a name that long is taken for a secret's)", () => {
    const entry = diffTool(tool("short") as never, tool("long") as never);
    const detail = JSON.stringify(entry);
    expect(detail).toContain("default changed");
    expect(detail).toContain('odd \\"key\\" aaaa');
    expect(detail).not.toContain('\\"short\\"');
    expect(detail).not.toContain('\\"long\\"');
  });

  it("a change of its default is a new revision, served to the client", async () => {
    const cat = makeCatalog([tool("short")]);
    const gw = await startGateway({
      args: ["--label", "big-keys", "--approval", "none", "--", ...fixtureCommand("catalog")],
      env: cat.env,
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    const defaultOf = async (client: Client) => {
      const { tools } = await client.listTools(undefined, { timeout: 60_000 });
      const props = tools[0]!.inputSchema.properties as Record<string, { default?: string }>;
      return props[KEY]?.default;
    };
    expect(await defaultOf(gw.client)).toBe("short");
    const from = gw.received().length;
    cat.write([tool("long")]);
    await gw.waitForNotification("notifications/tools/list_changed", 60_000, from);
    expect(await defaultOf(gw.client)).toBe("long");
  });
});
