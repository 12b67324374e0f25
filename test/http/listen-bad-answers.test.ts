// Under `run --listen`, a client's answer to a server's own request (roots, sampling, elicitation)
// that the front refuses before the gateway reads it (not JSON, not JSON-RPC, nested too deep: 400;
// over the size limit: 413) still ends that request: the server gets an error under its own id,
// as on stdio (docs/refusals.md), instead of waiting for an answer that will never come.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { completeLines } from "../helpers/completeLines.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { fixtureCommand } from "../helpers/paths.js";
import { startListener } from "./listen.js";
import { messagesOf, openSession, raw } from "./raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** What the client sends as its answer to request `id`, and what the front says to it. */
const BAD_ANSWERS: { name: string; body: (id: unknown) => string; status: number; error: string }[] = [
  {
    name: "nan",
    body: (id) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":NaN}`,
    status: 400,
    error: "response_invalid",
  },
  {
    name: "no-jsonrpc",
    body: (id) => JSON.stringify({ id, result: { roots: [] } }),
    status: 400,
    error: "response_invalid",
  },
  {
    name: "deep",
    body: (id) =>
      `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"roots":${"[".repeat(600)}${"]".repeat(600)}}}`,
    status: 400,
    error: "message_too_deep",
  },
  {
    name: "large",
    body: (id) => JSON.stringify({ jsonrpc: "2.0", id, result: { roots: [], pad: "x".repeat(10_000) } }),
    status: 413,
    error: "message_too_large",
  },
];

describe("a client's answer the front refuses", () => {
  it("the server's request it answered gets an error under its own id, and the client its HTTP status", async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const rawLog = join(dir, "raw.log");
    const l = await startListener(fixtureCommand("rawlines"), {
      args: ["--approval", "none", "--max-message-bytes", "4096"],
      env: { FIXTURE_RAW_LOG: rawLog },
    });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    const h = l.headers({ "mcp-session-id": session });
    // the server asks the client once per kind of bad answer, under ids of its own
    const lines = BAD_ANSWERS.map((b) =>
      JSON.stringify({ jsonrpc: "2.0", id: `srv-${b.name}`, method: "roots/list", params: { kind: b.name } }),
    );
    const sent = await raw(l, {
      headers: h,
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "raw/send", params: { lines } }),
    });
    expect(sent.status).toBe(200);
    const asked = messagesOf(sent.body).filter((m) => m.method === "roots/list");
    expect(asked).toHaveLength(BAD_ANSWERS.length);
    for (const m of asked) {
      const b = BAD_ANSWERS.find((x) => x.name === (m as { params: { kind: string } }).params.kind)!;
      const r = await raw(l, { headers: h, body: b.body(m.id) });
      expect(r.status, b.name).toBe(b.status);
    }
    // what reached the server: an error answer to each of its requests, under its own id
    const answers = () => {
      const out = new Map<string, { error?: { data?: { error?: string } } }>();
      for (const line of completeLines(readFileSync(rawLog, "utf8")).filter(Boolean)) {
        const m = JSON.parse(JSON.parse(line) as string) as {
          id?: unknown;
          method?: string;
          error?: { data?: { error?: string } };
        };
        if (m.method === undefined && typeof m.id === "string" && m.id.startsWith("srv-")) out.set(m.id, m);
      }
      return out;
    };
    await waitFor(
      () => answers().size === BAD_ANSWERS.length || null,
      10_000,
      "an answer to each server request",
    );
    for (const b of BAD_ANSWERS)
      expect(answers().get(`srv-${b.name}`)?.error?.data?.error, b.name).toBe(b.error);
  });
});
