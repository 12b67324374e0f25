// What a lenient server could be tricked into running: method names that fold to a guarded
// method are refused and never reach it, and the arguments it gets are exactly the validated ones.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

const auditEvents = verifiedAuditEvents;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function lenientGateway(o: { stateDir?: string; env?: Record<string, string> } = {}) {
  const dir = tempDir();
  const methodLog = join(dir, "methods.jsonl");
  const gw = await startGateway({
    args: ["--label", "lenient", "--approval", "none", "--", ...fixtureCommand("lenient")],
    env: { FIXTURE_METHOD_LOG: methodLog, ...o.env },
    ...(o.stateDir ? { stateDir: o.stateDir } : {}),
  });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  const received = () =>
    existsSync(methodLog)
      ? readJsonLines<{ method: string; params: Record<string, unknown> | null }>(methodLog)
      : [];
  return { gw, received };
}

describe("what never passes unguarded", () => {
  it("method names that fold to tools/call (or another guarded method) are refused -32601 and never reach the server", async () => {
    const { gw, received } = await lenientGateway();
    const variants = [
      "Tools/Call",
      "tools/call ",
      " tools/call",
      "TOOLS/CALL",
      "tools//call",
      "tools/call/",
      "tools/\u200bcall",
      "Resources/Read",
      "prompts/get\n",
      "Completion/Complete",
      "completion/complete ",
    ];
    for (const method of variants) {
      const err = await gw.client
        .request({ method, params: { name: "echo", arguments: { message: "x" } } }, ResultSchema)
        .catch((e) => e);
      expect(err, method).toMatchObject({ code: -32601 });
    }
    // an ordinary call still goes through, so the server was reachable all along
    await gw.client.callTool({ name: "echo", arguments: { message: "ok" } });
    const methods = received().map((r) => r.method);
    expect(methods).toContain("tools/call");
    for (const method of variants) expect(methods).not.toContain(method);
    expect(methods.filter((m) => m.trim().toLowerCase().includes("call"))).toEqual(["tools/call"]);
  });

  it("arguments: null is validated as {} and forwarded as {} (what was validated is what goes out)", async () => {
    const { gw, received } = await lenientGateway();
    await gw.client.request(
      {
        method: "tools/call",
        params: { name: "echo", arguments: null as unknown as Record<string, unknown> },
      },
      ResultSchema,
    );
    const calls = received().filter((r) => r.method === "tools/call");
    expect(calls).toHaveLength(1);
    expect(calls[0]?.params?.arguments).toEqual({});
  });

  it("resources/read, resources/subscribe, prompts/get and completion/complete are held while the server's identity is pending, recorded with run, epoch and a parameters digest, then forwarded", async () => {
    const stateDir = newStateDir();
    const { gw, received } = await lenientGateway({ stateDir, env: { FIXTURE_LIST_DELAY_MS: "400" } });
    // sent at once: the gateway's own tools/list (its catalog fetch) is still unanswered
    const [read, , prompt] = await Promise.all([
      gw.client.request({ method: "resources/read", params: { uri: "file:///secret.txt" } }, ResultSchema),
      // a subscription opens a channel of updates from code nobody has identified yet: held as a read is
      gw.client.request(
        { method: "resources/subscribe", params: { uri: "file:///secret.txt" } },
        ResultSchema,
      ),
      gw.client.request(
        { method: "prompts/get", params: { name: "p", arguments: { a: "1" } } },
        ResultSchema,
      ),
      gw.client.request(
        {
          method: "completion/complete",
          params: { ref: { type: "ref/prompt", name: "p" }, argument: { name: "a", value: "secret.txt" } },
        },
        ResultSchema,
      ),
    ]);
    expect(read).toMatchObject({ contents: [{ uri: "file:///secret.txt" }] });
    expect(prompt).toMatchObject({ messages: [] });
    const order = received().map((r) => r.method);
    const answered = order.indexOf("answered tools/list");
    expect(answered).toBeGreaterThanOrEqual(0);
    expect(order.indexOf("resources/read")).toBeGreaterThan(answered);
    expect(order.indexOf("resources/subscribe")).toBeGreaterThan(answered);
    expect(order.indexOf("prompts/get")).toBeGreaterThan(answered);
    expect(order.indexOf("completion/complete")).toBeGreaterThan(answered);
    await gw.close();
    const events = await auditEvents(stateDir);
    const started = events.find((e) => e.type === "server_started");
    const forwarded = events.filter((e) => e.type === "request_forwarded");
    expect(forwarded.map((e) => e.method).sort()).toEqual([
      "completion/complete",
      "prompts/get",
      "resources/read",
      "resources/subscribe",
    ]);
    for (const e of forwarded) {
      expect(e.run).toEqual(expect.any(String));
      expect(e.epoch).toBe(started?.epoch);
      expect(e.paramsDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(JSON.stringify(e)).not.toContain("secret.txt");
    }
  });
});
