// What a lenient server could be tricked into running: method names that fold to a guarded
// method are refused and never reach it, and the arguments it gets are exactly the validated ones.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { readJsonLines, removeDir, tempDir } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function lenientGateway() {
  const dir = tempDir();
  const methodLog = join(dir, "methods.jsonl");
  const gw = await startGateway({
    args: ["--label", "lenient", "--approval", "none", "--", ...fixtureCommand("lenient")],
    env: { FIXTURE_METHOD_LOG: methodLog },
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
});
