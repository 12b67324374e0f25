// A server that asks the client for what it never offered. MCP: "a server MUST NOT send requests
// for capabilities the client did not declare" (sampling/createMessage needs the client's
// `sampling`, roots/list its `roots`, elicitation/create its `elicitation`). Relayed, a careful
// client answers -32601 itself; a careless one acts on it (samples a model, lists its roots, asks
// its human) though it never offered to. The gateway answers such a request itself, with the
// -32601 the SDK's own client gives a method it has no handler for, and never relays it; what the
// client did declare still reaches it. The server is the official SDK's (sdk-asker.mjs), the
// clients are the official SDK's, over stdio and over `run --listen` (Streamable HTTP).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { startDirect, startGateway } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { startListener } from "../http/listen.js";

const ASKER = [NODE, FIXTURES.sdkAsker];
const UNDECLARED =
  /Method not found: "(sampling\/createMessage|roots\/list|elicitation\/create)" \(the client did not declare the (sampling|roots|elicitation) capability/;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

type Outcome = { result?: Record<string, unknown>; error?: { code: number; message: string } };

/** The outcome of each request `ask_all` made the server send, by method. */
async function askAll(client: Client): Promise<Record<string, Outcome>> {
  const r = await client.callTool({ name: "ask_all", arguments: {} });
  return JSON.parse((r.content as { text: string }[])[0]!.text) as Record<string, Outcome>;
}

/**
 * Handlers for what `declared` names (each records the method it got and answers), and a
 * fallback that records any other request that reaches the client (the SDK answers those with
 * -32601 itself): `got` lists every server request the client saw.
 */
function handlers(declared: Record<string, unknown>, got: string[]) {
  return (client: Client) => {
    if ("sampling" in declared)
      client.setRequestHandler(CreateMessageRequestSchema, async () => {
        got.push("sampling/createMessage");
        return { model: "m", role: "assistant", content: { type: "text", text: "sampled" } };
      });
    if ("elicitation" in declared)
      client.setRequestHandler(ElicitRequestSchema, async () => {
        got.push("elicitation/create");
        return { action: "decline" };
      });
    if ("roots" in declared)
      client.setRequestHandler(ListRootsRequestSchema, async () => {
        got.push("roots/list");
        return { roots: [{ uri: "file:///work", name: "work" }] };
      });
    client.fallbackRequestHandler = async (request) => {
      got.push(request.method);
      throw new Error(`not declared: ${request.method}`);
    };
  };
}

function expectRefused(o: Outcome | undefined, method: string, capability: string): void {
  expect(o?.error?.code, JSON.stringify(o)).toBe(-32601);
  expect(o?.error?.message).toMatch(UNDECLARED);
  expect(o?.error?.message).toContain(`"${method}"`);
  expect(o?.error?.message).toContain(`the ${capability} capability`);
}

describe("the SDK's own client, with no gateway", () => {
  it("answers a request it declared no capability for with -32601 (the code the gateway gives)", async () => {
    const s = await startDirect(NODE, [FIXTURES.sdkAsker], {}, { capabilities: {} });
    cleanup.push(() => s.close());
    const out = await askAll(s.client);
    for (const m of ["sampling/createMessage", "elicitation/create", "roots/list"])
      expect(out[m]?.error?.code, JSON.stringify(out)).toBe(-32601);
  });
});

describe("stdio", () => {
  it("a client that declared nothing is sent none of them: each is answered -32601 by the gateway", async () => {
    const got: string[] = [];
    const s = await startGateway({
      args: ["--label", "asker", "--approval", "none", "--", ...ASKER],
      capabilities: {},
      setup: handlers({}, got),
    });
    cleanup.push(() => s.close());
    const out = await askAll(s.client);
    expectRefused(out["sampling/createMessage"], "sampling/createMessage", "sampling");
    expectRefused(out["elicitation/create"], "elicitation/create", "elicitation");
    expectRefused(out["roots/list"], "roots/list", "roots");
    expect(got).toEqual([]);
    expect(s.received().filter((m) => m.method !== undefined && m.id !== undefined)).toEqual([]);
    // the gateway's stderr and the answer travel on different pipes: wait for the line
    const sampling =
      /refused the server's "sampling\/createMessage" request: the client did not declare the sampling capability/;
    await waitFor(() => sampling.test(s.stderr()), 10_000, "the sampling refusal line");
    // a ping needs no capability: still relayed (the SDK client answers it)
    const ping = await s.client.callTool({ name: "ask", arguments: { method: "ping" } });
    expect(JSON.parse((ping.content as { text: string }[])[0]!.text)).toEqual({ result: {} });
  });

  it("a client that declared sampling and roots gets those, and not elicitation", async () => {
    const got: string[] = [];
    const declared = { sampling: {}, roots: {} };
    const s = await startGateway({
      args: ["--label", "asker", "--approval", "none", "--", ...ASKER],
      capabilities: declared,
      setup: handlers(declared, got),
    });
    cleanup.push(() => s.close());
    const out = await askAll(s.client);
    expect(out["sampling/createMessage"]?.result, JSON.stringify(out)).toMatchObject({
      content: { text: "sampled" },
    });
    expect(out["roots/list"]?.result).toEqual({ roots: [{ uri: "file:///work", name: "work" }] });
    expectRefused(out["elicitation/create"], "elicitation/create", "elicitation");
    expect(got.sort()).toEqual(["roots/list", "sampling/createMessage"]);
  });
});

describe("HTTP (run --listen)", () => {
  async function connect(declared: Record<string, unknown>, got: string[]) {
    const l = await startListener(ASKER, { args: ["--approval", "none"] });
    cleanup.push(() => l.close());
    const client = new Client({ name: "undeclared-http", version: "1" }, { capabilities: declared });
    handlers(declared, got)(client);
    const transport = new StreamableHTTPClientTransport(new URL(l.url), {
      requestInit: { headers: { authorization: `Bearer ${l.token}` } },
    });
    await client.connect(transport);
    cleanup.push(() => client.close());
    return { l, client };
  }

  it("a client that declared only elicitation gets elicitation; sampling and roots are answered by the gateway", async () => {
    const got: string[] = [];
    const { l, client } = await connect({ elicitation: {} }, got);
    const out = await askAll(client);
    expect(out["elicitation/create"]?.result, JSON.stringify(out)).toEqual({ action: "decline" });
    expectRefused(out["sampling/createMessage"], "sampling/createMessage", "sampling");
    expectRefused(out["roots/list"], "roots/list", "roots");
    expect(got).toEqual(["elicitation/create"]);
    // the gateway's stderr and the HTTP answer travel apart: wait for the line
    const roots =
      /refused the server's "roots\/list" request: the client did not declare the roots capability/;
    await waitFor(() => roots.test(l.stderr()), 10_000, "the roots refusal line");
  });
});
