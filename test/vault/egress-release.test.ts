// HTTP delivery through the egress proxy, with real gateways, real fixture servers (a Node SDK
// server using global fetch and node:https, and a hand-written Python one using urllib) and
// real upstreams on loopback that record what they receive. The servers are unmodified: the
// proxy variables, the local CA and the Node preload come from the gateway.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, pending } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { NODE, REPO } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { httpsUpstream, httpUpstream, type Upstream } from "./egress-upstreams.js";

const SECRET = "egress-test-value-4d2b9e71";
const PLACEHOLDER = "portcullis-placeholder:inventory-api";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function storeHttpSecret(stateDir: string, ...hosts: string[]) {
  const r = await runCli(
    ["vault", "set", "inventory-api", "--from-stdin", ...hosts.flatMap((h) => ["--host", h])],
    { stateDir, env: passphraseEnv(), input: SECRET },
  );
  expect(r.code, r.stderr).toBe(0);
}

async function unlock(stateDir: string) {
  const r = await runCli(["unlock"], { stateDir, env: passphraseEnv() });
  expect(r.code, r.stderr).toBe(0);
  cleanup.push(async () => {
    await runCli(["lock"], { stateDir });
  });
}

function project(
  server: { command: string; args: string[] },
  hosts: string[],
  extra: Record<string, unknown> = {},
) {
  const dir = tempDir("portcullis-egress-");
  writeFileSync(
    join(dir, "portcullis.json"),
    JSON.stringify({
      servers: {
        api: {
          ...server,
          credentials: { API_KEY: { secret: "inventory-api", deliver: "http", hosts } },
          ...extra,
        },
      },
    }),
  );
  return dir;
}

const nodeServer = { command: NODE, args: [join(REPO, "test", "fixtures", "servers", "egress-node.mjs")] };
const pythonServer = {
  command: "python3",
  args: [join(REPO, "test", "fixtures", "servers", "egress-python.py")],
};

async function upstreams() {
  const dir = tempDir("portcullis-upstream-");
  const plain = await httpUpstream();
  const tls = await httpsUpstream(dir);
  const other = await httpUpstream();
  cleanup.push(
    () => plain.close(),
    () => tls.close(),
    () => other.close(),
  );
  return { plain, tls, other, hosts: [`127.0.0.1:${plain.port}`, `127.0.0.1:${tls.port}`] };
}

async function gateway(dir: string, stateDir: string, env: Record<string, string> = {}) {
  const gw = await startGateway({ args: ["api"], cwd: dir, stateDir, env });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return gw;
}

type Gw = Awaited<ReturnType<typeof gateway>>;

/** Calls a tool, approving the session grant (per tool) when one is asked for. */
async function approvedCall(
  gw: Gw,
  stateDir: string,
  name: string,
  args: Record<string, unknown>,
  seen: Set<string>,
) {
  const call = gw.client.callTool({ name, arguments: args });
  let answered = false;
  call.then(
    () => {
      answered = true;
    },
    () => {
      answered = true;
    },
  );
  const first = await waitFor(
    async () =>
      answered ? "answered" : ((await pending(stateDir)).find((q) => !seen.has(q.request)) ?? null),
    20_000,
    `the call of ${name} or its approval request`,
  );
  if (first !== "answered") {
    seen.add(first.request);
    await decideByCli(stateDir, "approve", first.request);
  }
  return call;
}

function text(r: unknown): string {
  return ((r as { content: { text: string }[] }).content[0]?.text ?? "") as string;
}

const released = (u: Upstream) => u.received.filter((r) => r.authorization === `Bearer ${SECRET}`);

describe("deliver http: the value reaches the declared host during an approved call, and only then", () => {
  it("node (fetch, node:https): locked → vault_locked; approved → HTTP and HTTPS get the value; env and other hosts get the placeholder", async () => {
    const { plain, tls, other, hosts } = await upstreams();
    const stateDir = newStateDir();
    const dir = project(nodeServer, hosts);
    await storeHttpSecret(stateDir, ...hosts);
    // the user's own CA setting: the proxy must keep trusting what they trust
    const gw = await gateway(dir, stateDir, { NODE_EXTRA_CA_CERTS: tls.caFile });
    const seen = new Set<string>();
    await expect(
      gw.client.callTool({ name: "fetch_url", arguments: { url: `${plain.url}/a` } }),
    ).rejects.toMatchObject({
      data: { error: "vault_locked" },
    });
    await unlock(stateDir);
    const env = await approvedCall(gw, stateDir, "show_env", {}, seen);
    expect(text(env)).toBe(PLACEHOLDER);
    const viaFetch = await approvedCall(gw, stateDir, "fetch_url", { url: `${plain.url}/fetch` }, seen);
    expect(text(viaFetch)).toBe("200 upstream ok /fetch");
    const viaFetchTls = await approvedCall(gw, stateDir, "fetch_url", { url: `${tls.url}/fetch-tls` }, seen);
    expect(text(viaFetchTls)).toBe("200 upstream ok /fetch-tls");
    const viaHttps = await approvedCall(gw, stateDir, "https_get", { url: `${tls.url}/https` }, seen);
    expect(text(viaHttps)).toBe("200 upstream ok /https");
    const viaHttp = await approvedCall(gw, stateDir, "https_get", { url: `${plain.url}/http` }, seen);
    expect(text(viaHttp)).toBe("200 upstream ok /http");
    // the header and the URL both carried the value, to the declared hosts
    expect(released(plain).map((r) => r.path)).toEqual(["/fetch", "/http"]);
    expect(released(tls).map((r) => r.path)).toEqual(["/fetch-tls", "/https"]);
    for (const r of [...plain.received, ...tls.received]) expect(r.key).toBe(SECRET);
    // an undeclared host gets the placeholder, tunnelled or proxied untouched
    const undeclared = await approvedCall(gw, stateDir, "fetch_url", { url: `${other.url}/x` }, seen);
    expect(text(undeclared)).toBe("200 upstream ok /x");
    expect(other.received).toEqual([
      { path: "/x", authorization: `Bearer ${PLACEHOLDER}`, key: PLACEHOLDER, seq: null },
    ]);
    expect(gw.stderr()).not.toContain(SECRET);
  });

  it("python (urllib): the declared host gets the value over HTTP and HTTPS; the server's env holds the placeholder", async () => {
    const { plain, tls, hosts } = await upstreams();
    const stateDir = newStateDir();
    const dir = project(pythonServer, hosts);
    await storeHttpSecret(stateDir, ...hosts);
    await unlock(stateDir);
    const gw = await gateway(dir, stateDir, { NODE_EXTRA_CA_CERTS: tls.caFile });
    const seen = new Set<string>();
    expect(text(await approvedCall(gw, stateDir, "show_env", {}, seen))).toBe(PLACEHOLDER);
    expect(text(await approvedCall(gw, stateDir, "fetch_url", { url: `${plain.url}/py` }, seen))).toBe(
      "200 upstream ok /py",
    );
    expect(text(await approvedCall(gw, stateDir, "fetch_url", { url: `${tls.url}/py-tls` }, seen))).toBe(
      "200 upstream ok /py-tls",
    );
    expect(released(plain).map((r) => r.path)).toEqual(["/py"]);
    expect(released(tls).map((r) => r.path)).toEqual(["/py-tls"]);
  });
});
