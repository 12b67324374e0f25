// A tool name holding a lone UTF-16 surrogate (`"pay\ud800"`: legal JSON text, no Unicode string)
// cannot be kept as written: the store's text columns hold UTF-8, where it becomes U+FFFD, so
// `"pay\ud800"` and `"pay\udbff"` are one name there. Listed, such a tool's call was put to a
// human under a request whose row no longer named the tool its review showed, and every approval
// of it was refused as if the store had been tampered with ("its tool was changed in the store
// since the gateway wrote it"). Such entries are now left out of the catalog, said in one warning
// line with their number; a call of one is `tool_not_in_catalog`, never forwarded nor put to a
// human. A guarded read whose target (a uri, say, copied from such a server's resource list) holds
// one is refused `target_not_well_formed` for the same reason. Real gateway, real fixture server
// (hostile-catalog.mjs), raw client.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { storedPending } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { scriptedCatalogGateway } from "../helpers/scriptedCatalog.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it("tools whose names hold a lone surrogate are left out of the catalog, said once; a call of one is tool_not_in_catalog, never forwarded nor asked", async () => {
  // written as JSON text: the escapes reach the gateway as the server wrote them
  const { gw, received } = await scriptedCatalogGateway({
    script: `export function list() {
       return '{"tools":[{"name":"pay\\\\ud800","inputSchema":{"type":"object"}},{"name":"pay\\\\udbff","inputSchema":{"type":"object"}},{"name":"ok","inputSchema":{"type":"object"}}]}';
     }`,
    args: ["--label", "lone", "--approval", "session"],
    cleanup,
  });

  const list = await gw.request("tools/list", {}, 30_000);
  expect(list.result, JSON.stringify(list)).toEqual({
    tools: [{ name: "ok", inputSchema: { type: "object" } }],
  });
  await waitFor(() => /ignored 2 tools whose names? /.test(gw.stderr()) || null, 10_000, "the warning");
  expect(gw.stderr()).toMatch(/lone surrogate/);

  gw.send(
    '{"jsonrpc":"2.0","id":"lone","method":"tools/call","params":{"name":"pay\\ud800","arguments":{}}}\n',
  );
  const call = await gw.next((m) => m.id === "lone", 20_000);
  expect(call.error?.data, JSON.stringify(call)).toMatchObject({ error: "tool_not_in_catalog" });
  expect(storedPending(gw.stateDir)).toEqual([]);
  expect((await gw.request("ping")).result).toEqual({});
  const calls = received().filter((l) => l.includes('"tools/call"'));
  expect(calls).toEqual([]);
}, 60_000);

it("a guarded read whose target holds a lone surrogate (a uri copied from such a server) is refused target_not_well_formed, never asked nor forwarded", async () => {
  const { gw, received } = await scriptedCatalogGateway({
    script: `export function list() { return { tools: [{ name: "ok", inputSchema: { type: "object" } }] }; }`,
    args: ["lone"],
    configure: (dir, server) =>
      writeFileSync(
        join(dir, "portcullis.json"),
        JSON.stringify({
          servers: { lone: { ...server, approval: { default: "none", resources: "session" } } },
        }),
      ),
    cleanup,
  });
  gw.send('{"jsonrpc":"2.0","id":"read","method":"resources/read","params":{"uri":"file:///x\\ud800"}}\n');
  const read = await gw.next((m) => m.id === "read", 20_000);
  expect(read.error, JSON.stringify(read)).toMatchObject({
    code: -32602,
    data: { error: "target_not_well_formed" },
  });
  expect(read.error?.message).toContain("resources/read");
  expect(storedPending(gw.stateDir)).toEqual([]);
  // a well-formed uri is still asked about
  gw.send('{"jsonrpc":"2.0","id":"fine","method":"resources/read","params":{"uri":"file:///x"}}\n');
  await waitFor(
    () => storedPending(gw.stateDir).length === 1 || null,
    20_000,
    "the approval request of the fine read",
  );
  expect((await gw.request("ping")).result).toEqual({});
  const reads = received().filter((l) => l.includes('"resources/read"'));
  expect(reads).toEqual([]);
}, 60_000);
