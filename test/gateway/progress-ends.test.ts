// The gateway's progress under a client's token (src/gateway/progress.ts: its own steps while a
// call waits for a human, the server's moved past them) belongs to one request: once that request
// is over, on whatever path, a later request under the same token starts from its own first step,
// never from the dead request's values. Paths that end a request without the server answering it:
// the client cancelled it at the server (a server that obeys never answers), its server process
// went away (answered epoch_transition).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { childrenOf, tempDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

describe("progress state ends with its request", () => {
  it("after a call cancelled at the server, or whose server died, a new call under the same token counts its progress from 1", async () => {
    const methodLog = join(tempDir("portcullis-progress-"), "methods.log");
    const gw = rawGateway({
      args: ["--label", "lenient", "--approval-timeout", "30000", "--", NODE, FIXTURES.lenient],
      env: { FIXTURE_METHOD_LOG: methodLog },
    });
    const seen = new Set<string>();
    const call = (id: string, message: string, token: string) =>
      gw.send({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "echo", arguments: { message }, _meta: { progressToken: token } },
      });
    /** the value of the gateway's first "waiting for human" step under `token` after message `from` */
    const firstWait = async (token: string, from: number) =>
      (
        await waitFor(
          () =>
            gw
              .messages()
              .slice(from)
              .find(
                (m: WireMessage) =>
                  m.method === "notifications/progress" &&
                  m.params.progressToken === token &&
                  /waiting for human/.test(m.params.message),
              ),
          20_000,
          `a waiting step under ${token}`,
        )
      ).params.progress;
    const approveNext = async () =>
      decideByCli(
        gw.stateDir,
        "approve",
        (await nextStoredRequest(gw.stateDir, seen)).request,
        "--for",
        "call",
      );
    const atServer = (message: string) =>
      waitFor(
        () => {
          try {
            return readFileSync(methodLog, "utf8").includes(`"message":"${message}"`) || null;
          } catch {
            return null;
          }
        },
        20_000,
        `the call ${message} at the server`,
      );
    try {
      await gw.initialize();
      await gw.request("tools/list");

      // 1. a call the client cancels once it is at the server (which never answers it)
      call("a", "hang", "tok");
      expect(await firstWait("tok", 0)).toBe(1);
      await approveNext();
      await atServer("hang");
      gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "a" } });
      let mark = gw.messages().length;
      call("b", "after-cancel", "tok");
      expect(await firstWait("tok", mark)).toBe(1);
      await approveNext();
      expect(JSON.stringify((await gw.next((m) => m.id === "b", 20_000)).result)).toContain("after-cancel");

      // 2. a call whose server process dies under it
      call("c", "hang", "tok2");
      expect(await firstWait("tok2", 0)).toBe(1);
      await approveNext();
      await waitFor(
        () => (readFileSync(methodLog, "utf8").match(/"message":"hang"/g)?.length ?? 0) >= 2 || null,
        20_000,
        "the second hanging call at the server",
      );
      const server = Number(childrenOf(gw.pid).split(" ")[0]);
      expect(server).toBeGreaterThan(0);
      process.kill(server, "SIGKILL");
      expect((await gw.next((m) => m.id === "c", 20_000)).error?.code).toBe(-32054);
      mark = gw.messages().length;
      call("d", "after-crash", "tok2");
      expect(await firstWait("tok2", mark)).toBe(1);
      await approveNext();
      expect(JSON.stringify((await gw.next((m) => m.id === "d", 20_000)).result)).toContain("after-crash");
    } finally {
      await gw.close();
    }
  });
});
