// JSON-RPC 2.0 lets a request give its params by position (an array) as well as by name, and a
// lenient server takes them so: `resources/read ["secret://x"]` reads secret://x. The guard reads
// a read's target by name only (params.uri, params.name, params.ref): given an array it saw no
// target, asked the human to approve `resources/read null` (arguments: none), recorded that, and
// forwarded the array as it was; the session grant of "resources/read null" then covered every
// read by position, of any uri, with nobody asked again. MCP's params are always an object: a
// guarded request whose params are not one is refused (-32602) before anything is decided,
// recorded or sent, as a tools/call without params.name is. Real gateway, real pipes, the
// hostile-asker fixture (which reads params by position), approval.resources "session".
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { storedPending } from "../helpers/approvals.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The methods the server received, from its log (a line still being written is skipped). */
function methodsReceived(log: string): string[] {
  let text = "";
  try {
    text = readFileSync(log, "utf8");
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const line of text.split("\n")) {
    try {
      const m = JSON.parse((JSON.parse(line) as { line: string }).line) as { method?: string };
      if (typeof m.method === "string") out.push(m.method);
    } catch {
      // partial
    }
  }
  return out;
}

async function gateway(): Promise<{ peer: RawGateway; log: string }> {
  const dir = tempDir();
  cleanup.push(() => removeDir(dir));
  const log = join(dir, "asker.log");
  const server = join(import.meta.dirname, "../fixtures/servers/hostile-asker.mjs");
  const config = {
    servers: {
      asker: {
        command: NODE,
        args: [server],
        env: { FIXTURE_ASKER_LOG: log },
        approval: { default: "none", resources: "session" },
      },
    },
  };
  writeFileSync(join(dir, "portcullis.json"), JSON.stringify(config));
  const peer = rawGateway({ args: ["asker"], cwd: dir });
  cleanup.push(() => peer.close());
  const init = await peer.initialize();
  expect(init.result, peer.stderr()).toBeDefined();
  expect((await peer.request("tools/list")).result).toBeDefined();
  return { peer, log };
}

describe("a guarded request whose params are given by position", () => {
  it("resources/read, resources/subscribe, prompts/get, completion/complete with params as an array are refused -32602, never asked about nor sent", async () => {
    const { peer, log } = await gateway();
    const asked: [string, unknown[]][] = [
      ["resources/read", ["inventory://reports/one"]],
      ["resources/subscribe", ["inventory://reports/one"]],
      ["prompts/get", ["admin-prompt", {}]],
      [
        "completion/complete",
        [
          { type: "ref/prompt", name: "admin-prompt" },
          { name: "a", value: "" },
        ],
      ],
    ];
    for (const [method, params] of asked) {
      const answer = await peer.request(method, params, 10_000);
      expect(answer.error?.code, `${method}: ${JSON.stringify(answer)}`).toBe(-32602);
      expect(answer.error?.message).toContain(method);
    }
    // nobody was asked to approve a read of "null", and the server got none of them
    expect(storedPending(peer.stateDir)).toEqual([]);
    const methods = methodsReceived(log);
    for (const [method] of asked) expect(methods, method).not.toContain(method);

    // a read by name is still decided as before: it waits for a human, named by its uri
    peer.send({
      jsonrpc: "2.0",
      id: "by-name",
      method: "resources/read",
      params: { uri: "inventory://reports/one" },
    });
    const req = await waitFor(() => storedPending(peer.stateDir)[0], 10_000, "the approval request");
    expect(req.tool).toBe("resources/read inventory://reports/one");
  }, 60_000);

  it("subscriptions/listen with params as an array is refused -32602 and never sent", async () => {
    const { peer, log } = await gateway();
    const answer = await peer.request(
      "subscriptions/listen",
      [{ notifications: { resourceSubscriptions: ["inventory://reports/one"] } }],
      10_000,
    );
    expect(answer.error?.code, JSON.stringify(answer)).toBe(-32602);
    expect(methodsReceived(log)).not.toContain("subscriptions/listen");
  }, 60_000);
});
