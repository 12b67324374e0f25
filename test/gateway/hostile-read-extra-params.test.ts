// A session grant of a read covers its method and target (`resources/read test://a`) and nothing
// else. The client writes the rest of the read's params: a member no revision of MCP defines for
// it (`URI`, `uris`, `path`) went to the server as written under that grant, though a lenient
// server may take its target from one (`params.URI ?? params.uri`), and read test://secret under
// the human's approval of test://a. Only the members the read's method has (and `_meta`) are
// decided, recorded and sent. Real gateway, the lenient fixture (which logs the params of every
// request it receives), the decision by the real CLI.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a guarded read's params beyond its target", () => {
  it("members its method does not have never reach the server under the target's session grant", async () => {
    const dir = tempDir();
    const methodLog = join(dir, "methods.jsonl");
    const [command, ...args] = fixtureCommand("lenient");
    const config = {
      servers: {
        lenient: {
          command,
          args,
          env: { FIXTURE_METHOD_LOG: methodLog },
          approval: { default: "none", resources: "session" },
        },
      },
    };
    writeFileSync(join(dir, "portcullis.json"), JSON.stringify(config));
    const stateDir = newStateDir();
    const gw = await startGateway({ args: ["lenient"], cwd: dir, stateDir });
    cleanup.push(
      () => gw.close(),
      () => removeDir(dir),
    );
    const received = (method: string) =>
      readJsonLines<{ method: string; params: Record<string, unknown> | null }>(methodLog)
        .filter((r) => r.method === method)
        .map((r) => r.params);

    // the human approves reads of test://a for the session
    const first = gw.client.request({ method: "resources/read", params: { uri: "test://a" } }, ResultSchema);
    const req = await nextStoredRequest(stateDir, new Set());
    expect(req.tool).toBe("resources/read test://a");
    await decideByCli(stateDir, "approve", req.request, "--for", "session");
    await first;

    // a read of test://a that carries another target in members a read does not have
    await gw.client.request(
      {
        method: "resources/read",
        params: {
          uri: "test://a",
          URI: "test://secret",
          uris: ["test://secret"],
          path: "/etc/passwd",
          _meta: { progressToken: "r-1" },
        },
      },
      ResultSchema,
    );
    await waitFor(() => received("resources/read").length >= 2, 10_000, "the second read at the server");
    const reads = received("resources/read");
    expect(reads).toHaveLength(2);
    expect(JSON.stringify(reads)).not.toContain("secret");
    expect(JSON.stringify(reads)).not.toContain("passwd");
    expect(reads[1]).toEqual({ uri: "test://a", _meta: { progressToken: "r-1" } });
    await waitFor(() => /left out 3 members/.test(gw.stderr()), 10_000, "the gateway's line");
    expect(gw.stderr()).toContain('"URI", "uris", "path"');
  }, 60_000);
});
