// MCP (server/prompts, server/resources, "List Changed Notification"): a server that declared
// `prompts.listChanged` / `resources.listChanged` tells its client when the list changes. Behind
// the gateway the client's server is a process the gateway may replace (a crash and respawn, a
// rebuild, a restart): a new process holds whatever prompts and resources its code offers now, and
// it sends no list_changed of its own (for it nothing changed). The gateway lists tools itself and
// says when their list changed; prompts and resources it does not list, so it cannot tell whether
// the new process's differ: it tells the client to list them again, for each list whose change the
// server declared it would announce. Before, a host (which caches those lists until told) kept
// showing the first process's prompts and resources after a rebuild, until it reconnected.
import { describe, expect, it } from "vitest";
import { childrenOf } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";

describe("prompts and resources lists after a new server process (legacy era)", () => {
  it("the client is told to list them again, as the server's capabilities announce", async () => {
    const gw = await startGateway({
      args: ["--label", "conf", "--approval", "none", "--", NODE, FIXTURES.conformance],
    });
    try {
      // the premise: the server announces both lists' changes, and the client relies on it
      expect(gw.client.getServerCapabilities()).toMatchObject({
        prompts: { listChanged: true },
        resources: { listChanged: true },
      });
      await gw.client.listTools();
      const before = (await gw.client.listPrompts()).prompts.map((p) => p.name);
      await gw.client.listResources();
      // nothing announced on the first process: the client listed what it serves
      expect(gw.notifications("notifications/prompts/list_changed")).toEqual([]);
      expect(gw.notifications("notifications/resources/list_changed")).toEqual([]);

      const server = Number(childrenOf(gw.pid).split(" ")[0]);
      expect(server).toBeGreaterThan(0);
      const mark = gw.received().length;
      process.kill(server, "SIGKILL");
      await gw.waitForStderr(/new execution epoch/, 20_000);

      await gw.waitForNotification("notifications/prompts/list_changed", 20_000, mark);
      await gw.waitForNotification("notifications/resources/list_changed", 20_000, mark);
      // the client lists again: the new process answers
      expect((await gw.client.listPrompts()).prompts.map((p) => p.name)).toEqual(before);
      // once per new process, not once per tool-list fetch or per request
      await gw.client.listTools();
      expect(gw.notifications("notifications/prompts/list_changed")).toHaveLength(1);
      expect(gw.notifications("notifications/resources/list_changed")).toHaveLength(1);
    } finally {
      await gw.close();
    }
  });

  it("a list whose changes the server does not announce is not announced", async () => {
    // the lenient fixture declares prompts and resources without listChanged
    const gw = await startGateway({
      args: ["--label", "lenient", "--approval", "none", "--", NODE, FIXTURES.lenient],
    });
    try {
      expect(gw.client.getServerCapabilities()?.prompts).toEqual({});
      await gw.client.listTools();
      const server = Number(childrenOf(gw.pid).split(" ")[0]);
      expect(server).toBeGreaterThan(0);
      process.kill(server, "SIGKILL");
      await gw.waitForStderr(/new execution epoch/, 20_000);
      // the new process serves (its catalog fetched, the client's list answered)
      await gw.client.listTools();
      await gw.client.ping();
      expect(gw.notifications("notifications/prompts/list_changed")).toEqual([]);
      expect(gw.notifications("notifications/resources/list_changed")).toEqual([]);
    } finally {
      await gw.close();
    }
  });
});
