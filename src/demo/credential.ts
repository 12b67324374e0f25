import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { decideRequest, pendingRequests, pinnedSigner } from "../approval/index.js";
import { NO_CONSOLE_ENV } from "../console/launch.js";
import { openStore, type Store } from "../store/db.js";
import { quotedCommand, stateDirFlagFor } from "../store/stateDir.js";
import { createCa, mintLeaf } from "../vault/egress/certs.js";
import { text, waitFor } from "./observe.js";

/**
 * The demo's credential chapter: an inventory API key stored in the vault for HTTP delivery.
 * The server's environment holds a placeholder; during the approved call the API (HTTPS on
 * loopback, with its own CA, trusted the way a user trusts one: NODE_EXTRA_CA_CERTS) receives the
 * real key through the egress proxy; after a rebuild, before anyone approves the new code,
 * nothing is released: its own requests carry the placeholder and its call is refused stale.
 * The key is made up here and never printed.
 */

const LABEL = "inventory-api-demo";
const SCOPE = "inventory-api-staging";
const DECIDED_BY = "demo (same code path as 'portcullis approve')";

export interface CredentialStoryContext {
  root: string;
  stateDir: string;
  /** whether the state directory outlives the demo (--keep): a command it prints can then be run */
  keep: boolean;
  passphrase: string;
  out: (line: string) => void;
}

export async function credentialStory(c: CredentialStoryContext): Promise<void> {
  const note = (s: string) => c.out(`   ${s}`);
  // every command shown names the demo's state directory, as it was run there: typed as shown
  // without it, it would act on the user's own state directory instead
  const here = stateDirFlagFor(c.stateDir);
  c.out("\n── 8. A credential the server never holds");
  const key = `demo-inventory-key-${Math.random().toString(36).slice(2, 10)}`;
  const api = await inventoryApi(c.root);
  const cli = fileURLToPath(new URL("../cli/main.cjs", import.meta.url));
  const passFile = join(c.root, "demo-passphrase");
  writeFileSync(passFile, `${c.passphrase}\n`, { mode: 0o600 });
  const portcullis = (args: string[], input = "") => {
    const r = spawnSync(process.execPath, [cli, ...args, "--state-dir", c.stateDir], {
      input,
      encoding: "utf8",
      env: { ...process.env, PORTCULLIS_PASSPHRASE_FILE: passFile },
    });
    if (r.status !== 0) throw new Error(`portcullis ${args[0]} failed: ${r.stderr.trim()}`);
    return r.stdout.trim();
  };
  let client: Client | null = null;
  let db: Store | null = null;
  try {
    note(
      `$ portcullis vault set ${SCOPE} --host ${api.host}${here}   (the key typed once, sealed in the store)`,
    );
    for (const l of portcullis(["vault", "set", SCOPE, "--from-stdin", "--host", api.host], key).split("\n"))
      note(`  ${l}`);
    note(`$ portcullis unlock --for 10m${here}`);
    note(`  ${portcullis(["unlock", "--for", "10m"])}`);

    const dir = join(c.root, "inventory-api");
    const entry = join(dir, "dist", "server.js");
    mkdirSync(join(dir, "dist"), { recursive: true });
    writeFileSync(
      join(dir, "package.json"),
      `${JSON.stringify({ name: LABEL, private: true, type: "module" })}\n`,
    );
    writeFileSync(entry, serverSource("A"));
    const config = {
      servers: {
        [LABEL]: {
          command: process.execPath,
          args: ["dist/server.js"],
          env: { DEMO_API_URL: api.url },
          credentials: { INVENTORY_API_KEY: { secret: SCOPE, deliver: "http", hosts: [api.host] } },
          onChange: "restart",
        },
      },
    };
    writeFileSync(join(dir, "portcullis.json"), `${JSON.stringify(config, null, 2)}\n`);
    note(`portcullis.json: "credentials": ${JSON.stringify(config.servers[LABEL].credentials)}`);
    const lines: string[] = [];
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cli, "run", "--state-dir", c.stateDir, LABEL],
      cwd: dir,
      // The chapter decides its requests in-process (with --console too): a console started on
      // demand would serve nobody, and with --keep it outlived the demo.
      env: { ...getDefaultEnvironment(), NODE_EXTRA_CA_CERTS: api.caFile, [NO_CONSOLE_ENV]: "1" },
      stderr: "pipe",
    });
    let partial = "";
    transport.stderr?.on("data", (b: Buffer) => {
      partial += b.toString("utf8");
      for (let nl = partial.indexOf("\n"); nl !== -1; nl = partial.indexOf("\n")) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        lines.push(line);
        if (/egress proxy on|new execution epoch/.test(line)) c.out(`   │ gateway ▸ ${line}`);
      }
    });
    client = new Client({ name: "demo-agent", version: "1.0.0" }, { capabilities: {} });
    await client.connect(transport);
    db = openStore(c.stateDir);
    const store = db;
    const approve = async () => {
      const req = await waitFor(() => pendingRequests(store)[0] ?? null, "an approval request");
      const signer = await pinnedSigner(store, c.stateDir, c.passphrase);
      decideRequest(store, req.request, { approve: true, for: "session" }, DECIDED_BY, signer, c.stateDir);
      note(`  approved ${req.tool} for the session (credentials: ${req.credentialScope.join(", ")})`);
    };
    await client.listTools();

    const env = client.callTool({ name: "show_key", arguments: {} });
    await approve();
    note(`show_key → the server's INVENTORY_API_KEY is "${text(await env)}"`);

    const sync = client.callTool({ name: "sync_stock", arguments: {} });
    await approve();
    note(`sync_stock → ${text(await sync)}`);
    note(`the API received: ${api.describe(key)}`);

    const mark = api.received.length;
    writeFileSync(entry, serverSource("B"));
    note("rebuild: dist/server.js rewritten; revision B also calls the API when it starts");
    await waitFor(() => lines.some((l) => /new execution epoch/.test(l)), "the new epoch");
    await waitFor(() => api.received.length > mark, "revision B's own request");
    const stale = await client.callTool({ name: "sync_stock", arguments: {} }).then(
      () => null,
      (e: { code?: number; data?: { error?: string } }) => e,
    );
    note(`sync_stock before anyone approved revision B → refused ${stale?.code} ${stale?.data?.error ?? ""}`);
    note(`since the rebuild the API received: ${api.describe(key, mark)}`);
    note(
      c.keep
        ? `nothing was released to code no human approved; ${quotedCommand("egress", c.stateDir)} lists every destination per epoch`
        : "nothing was released to code no human approved; 'portcullis egress' lists every destination per epoch (this demo's state directory is removed as it ends: 'portcullis demo --keep' keeps it to read)",
    );
  } finally {
    await client?.close().catch(() => {});
    db?.close();
    spawnSync(process.execPath, [cli, "lock", "--state-dir", c.stateDir], { encoding: "utf8" });
    await new Promise<void>((r) => api.server.close(() => r()));
  }
}

async function inventoryApi(root: string) {
  const ca = await createCa("portcullis demo: the inventory API's own CA");
  const leaf = await mintLeaf(ca, "127.0.0.1");
  const caFile = join(root, "inventory-api-ca.pem");
  writeFileSync(caFile, ca.certPem);
  const received: string[] = [];
  const server: Server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    received.push(req.headers.authorization ?? "");
    res.end(JSON.stringify({ sku: "WIDGET-7", stock: 42 }));
  });
  server.keepAliveTimeout = 500;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as { port: number }).port;
  return {
    server,
    caFile,
    received,
    host: `127.0.0.1:${port}`,
    url: `https://127.0.0.1:${port}`,
    /** what the API received since `from`, told without the key itself */
    describe(key: string, from = 0): string {
      const got = received.slice(from);
      if (got.length === 0) return "nothing";
      return got
        .map((a) =>
          a === `Bearer ${key}`
            ? "the real key"
            : a.includes("portcullis-placeholder:")
              ? "the placeholder"
              : "no key",
        )
        .join(", ");
    },
  };
}

function serverSource(rev: "A" | "B"): string {
  const sdk = {
    server: import.meta.resolve("@modelcontextprotocol/sdk/server/index.js"),
    stdio: import.meta.resolve("@modelcontextprotocol/sdk/server/stdio.js"),
    types: import.meta.resolve("@modelcontextprotocol/sdk/types.js"),
  };
  return `// generated by portcullis demo: revision ${rev}
import { Server } from ${JSON.stringify(sdk.server)};
import { StdioServerTransport } from ${JSON.stringify(sdk.stdio)};
import { CallToolRequestSchema, ListToolsRequestSchema } from ${JSON.stringify(sdk.types)};

const api = (path) => fetch(process.env.DEMO_API_URL + path, { headers: { authorization: "Bearer " + process.env.INVENTORY_API_KEY } });
const tools = [
  { name: "show_key", description: "What this process holds in INVENTORY_API_KEY.", inputSchema: { type: "object" } },
  { name: "sync_stock", description: "Read the stock from the inventory API.", inputSchema: { type: "object" } },
];
const server = new Server({ name: "${LABEL}", version: "${rev}" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  if (req.params.name === "show_key") return { content: [{ type: "text", text: process.env.INVENTORY_API_KEY ?? "" }] };
  const r = await api("/stock");
  return { content: [{ type: "text", text: r.status + " " + (await r.text()) }] };
});
${rev === "B" ? 'api("/startup").catch(() => {});\n' : ""}await server.connect(new StdioServerTransport());
`;
}
