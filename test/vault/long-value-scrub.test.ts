// Released values as long as the vault and `run --url --header` accept them: a real gateway in
// front of the vaulted fixture (test/fixtures/servers/vaulted.mjs), given by the vault a value of
// 64 KiB (and one of 6,000 non-ASCII characters), whose tools echo it in every form the fixture
// knows; and `run --url` with a 30,000-character header value before a loopback HTTP server that
// echoes it. The client sees only markers, and the gateway keeps serving. Scrubbing built regular
// expressions from the values, which V8 cannot compile (or runs out of stack matching) past a few
// thousand characters: the gateway died at the first message (`internal error`, exit 70) or of an
// unhandled rejection.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_VALUE_BYTES } from "../../src/vault/secrets.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret, vaultedProject } from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

// biome-ignore lint/suspicious/noExplicitAny: tool results are read loosely
const textOf = (r: any): string => r.content?.[0]?.text ?? "";

/** `bytes` UTF-8 bytes of varied text: every encoding differs from the raw value. */
function longValue(bytes: number): string {
  const unit = "Zq7/w+ é=Xü-9_k4";
  let v = "";
  for (let i = 0; Buffer.byteLength(v) + Buffer.byteLength(unit) + 8 <= bytes; i++) v += unit + (i % 10);
  while (Buffer.byteLength(v) < bytes) v += "a";
  return v;
}

const FORMS = ["raw", "base64", "base64url", "url", "form", "json", "hex", "pyquote", "gopath"];

async function echoedInEveryForm(value: string): Promise<void> {
  const stateDir = newStateDir();
  cleanup.push(async () => {
    await runCli(["lock"], { stateDir });
  });
  await storeSecret(stateDir, "big", value, "--deliver", "env");
  expect((await runCli(["unlock"], { stateDir, env: passphraseEnv() })).code).toBe(0);
  const project = vaultedProject({
    credentials: { API_TOKEN: { secret: "big", deliver: "env" } },
    approval: { default: "none" },
  });
  cleanup.push(() => project.cleanup());
  const gw = await startGateway({ args: ["vaulted"], cwd: project.dir, stateDir });
  cleanup.push(() => gw.close());
  const { tools } = await gw.client.listTools();
  expect(tools.find((t) => t.name === "describe")?.description).toBe(
    "Describes the connection (key [redacted:big])",
  );
  const shown: string[] = [];
  for (const form of FORMS) {
    const r = await gw.client.callTool({ name: "reveal", arguments: { form, note: form } });
    // the json form keeps its own quotes around the marker
    expect(textOf(r).replace('{"token":"[redacted:big]"}', "[redacted:big]"), form).toBe(
      `${form} [redacted:big]`,
    );
    shown.push(JSON.stringify(r));
  }
  for (const note of ["a", "ab", "abc"]) {
    const r = await gw.client.callTool({ name: "reveal", arguments: { form: "base64-inside", note } });
    expect(textOf(r), note).toContain("[redacted:big]");
    shown.push(JSON.stringify(r));
  }
  await gw.client.callTool({ name: "whisper", arguments: {} });
  await gw.waitForStderr(/token=\[redacted:big\] b64=\[redacted:big\]/);
  // still serving, and nothing it showed holds 16 characters of the value
  expect(textOf(await gw.client.callTool({ name: "describe", arguments: {} }))).toBe(
    "connected with [redacted:big]",
  );
  const everything = [...shown, gw.stderr()].join("\n");
  for (let i = 0; i + 16 <= value.length; i += 997) expect(everything).not.toContain(value.slice(i, i + 16));
  expect(gw.stderr()).not.toContain("internal error");
}

describe("released values as long as the vault accepts", () => {
  it("a 64 KiB value echoed in every form reaches the client only as markers, and the gateway serves on", async () => {
    const value = longValue(MAX_VALUE_BYTES);
    expect(Buffer.byteLength(value)).toBe(MAX_VALUE_BYTES);
    await echoedInEveryForm(value);
  }, 60_000);

  it("a value of 6,000 non-ASCII characters too", async () => {
    await echoedInEveryForm("é".repeat(6000));
  }, 60_000);

  it("run --url with a 30,000-character header value: the server's echo of it is a marker, no crash", async () => {
    const value = `k${"a".repeat(29_998)}z`;
    const seen: string[] = [];
    const server: Server = createServer(
      { maxHeaderSize: 256 * 1024 },
      (req: IncomingMessage, res: ServerResponse) => {
        if (req.method !== "POST") return void res.writeHead(405).end();
        const key = String(req.headers["x-api-key"] ?? "");
        seen.push(key);
        const chunks: Buffer[] = [];
        req.on("data", (b: Buffer) => chunks.push(b));
        req.on("end", () => {
          const msg = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
            id?: unknown;
            method?: string;
            params?: { protocolVersion?: string };
          };
          const json = (result: unknown, headers: Record<string, string> = {}) =>
            res
              .writeHead(200, { "content-type": "application/json", ...headers })
              .end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }));
          if (msg.id === undefined) return void res.writeHead(202).end();
          if (msg.method === "initialize")
            return json(
              {
                protocolVersion: msg.params?.protocolVersion ?? "2025-06-18",
                capabilities: { tools: {} },
                serverInfo: { name: "echoing", version: "1.0.0" },
              },
              { "mcp-session-id": "s-1" },
            );
          if (msg.method === "tools/list")
            return json({
              tools: [
                { name: "echo", description: `key ${key}`, inputSchema: { type: "object", properties: {} } },
              ],
            });
          if (msg.method === "tools/call")
            return json({
              content: [{ type: "text", text: `raw ${key} url ${encodeURIComponent(`${key}%`)}` }],
            });
          return json({});
        });
      },
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanup.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as AddressInfo).port;
    const gw = await startGateway({
      args: [
        "--url",
        `http://127.0.0.1:${port}/mcp`,
        "--header",
        `X-Api-Key: ${value}`,
        "--approval",
        "none",
      ],
    });
    cleanup.push(() => gw.close());
    const { tools } = await gw.client.listTools();
    expect(seen).toContain(value);
    expect(tools[0]?.description).toMatch(/^key \[redacted:[^\]]+\]$/);
    const r = await gw.client.callTool({ name: "echo", arguments: {} });
    expect(textOf(r)).toMatch(/^raw \[redacted:[^\]]+\] url \[redacted:[^\]]+\]%25$/);
    expect(JSON.stringify(r)).not.toContain("a".repeat(64));
    expect(gw.stderr()).not.toContain("internal error");
  }, 60_000);
});
