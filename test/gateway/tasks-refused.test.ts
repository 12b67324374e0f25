// The gateway offers no 2025-11-25 tasks (docs/protocol-eras.md, "Tasks"), so the client's tasks/*
// requests are refused, never relayed: a server that made tasks some other way would otherwise
// hand out their results past the call records. A server's notifications/tasks/status is dropped
// (the client created no task); the client's own, about a task it runs for the server, still goes.
import { describe, expect, it } from "vitest";
import { rawlinesGateway } from "../helpers/raw.js";

const TASK_METHODS = ["tasks/get", "tasks/result", "tasks/list", "tasks/cancel"];

describe("tasks through the gateway", () => {
  it("the client's tasks/* requests are refused as method not found, never reach the server; a server's task status is dropped", async () => {
    const { peer, received } = await rawlinesGateway();
    try {
      // a look-alike a lenient server might dispatch as tasks/result is refused as well
      for (const method of [...TASK_METHODS, "Tasks/Result "]) {
        const r = await peer.request(method, method === "tasks/list" ? {} : { taskId: "t-1" });
        expect(r.error, method).toMatchObject({ code: -32601 });
        expect(r.error?.message, method).toContain(`Method not found: ${JSON.stringify(method)}`);
        expect(r.error?.message, method).toMatch(/portcullis does not offer tasks/);
      }
      // the server speaks of a task, then of something else; the client gets only the latter
      const status = {
        jsonrpc: "2.0",
        method: "notifications/tasks/status",
        params: { taskId: "t-1", status: "completed", createdAt: "2025-11-25T00:00:00Z", ttl: null },
      };
      const log = {
        jsonrpc: "2.0",
        method: "notifications/message",
        params: { level: "info", data: "after" },
      };
      const sent = await peer.request("raw/send", { lines: [JSON.stringify(status), JSON.stringify(log)] });
      expect(sent.result).toEqual({});
      const methods = peer.messages().map((m) => m.method);
      expect(methods).toContain("notifications/message");
      expect(methods).not.toContain("notifications/tasks/status");
      // the client's status of a task it runs for the server (a task-augmented sampling request)
      peer.send({ ...status, params: { ...status.params, taskId: "client-task" } });
      await peer.request("ping");
      const lines = received();
      expect(lines.some((l) => l.includes("client-task"))).toBe(true);
      expect(lines.filter((l) => /"tasks\/|Tasks\//.test(l))).toEqual([]);
    } finally {
      await peer.close();
    }
  });
});
