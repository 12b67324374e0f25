// HTTP delivery through the egress proxy, with real gateways, real fixture servers (a Node SDK
// server using global fetch and node:https, and a hand-written Python one using urllib) and
// real upstreams on loopback that record what they receive. The servers are unmodified: the
// proxy variables, the local CA and the Node preload come from the gateway.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sleep } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import {
  approvedCall,
  egressKit,
  nodeServer,
  PLACEHOLDER,
  pythonServer,
  released,
  SECRET,
  text,
} from "./egress-kit.js";

const k = egressKit();

/** Every file under dir, as latin1 text (any byte sequence can be searched). */
function everyFile(dir: string): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...everyFile(p));
    else if (st.isFile()) out.push({ path: p, text: readFileSync(p).toString("latin1") });
  }
  return out;
}
afterEach(() => k.cleanupAll());

describe("deliver http: the value reaches the declared host during an approved call, and only then", () => {
  it("node (fetch, node:https): locked → vault_locked; approved → HTTP and HTTPS get the value; env and other hosts get the placeholder", async () => {
    const { plain, tls, other, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, hosts);
    await k.storeHttpSecret(stateDir, ...hosts);
    // the user's own CA setting: the proxy must keep trusting what they trust
    const gw = await k.gateway(dir, stateDir, { NODE_EXTRA_CA_CERTS: tls.caFile });
    const seen = new Set<string>();
    await expect(
      gw.client.callTool({ name: "fetch_url", arguments: { url: `${plain.url}/a` } }),
    ).rejects.toMatchObject({
      data: { error: "vault_locked" },
    });
    await k.unlock(stateDir);
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
    // the value is nowhere else: not in the gateway's stderr, any file of the state directory, any
    // process's command line or environment (ps e), `egress --json`, `status --json`
    expect(gw.stderr()).not.toContain(SECRET);
    await sleep(300); // the egress index is written in groups
    for (const f of everyFile(stateDir)) expect(f.text, f.path).not.toContain(SECRET);
    expect(execFileSync("ps", ["axeww"], { encoding: "utf8", maxBuffer: 64 << 20 })).not.toContain(SECRET);
    for (const args of [
      ["egress", "--json"],
      ["status", "--json"],
    ])
      expect((await runCli(args, { stateDir })).stdout).not.toContain(SECRET);
  });

  it("python (urllib): the declared host gets the value over HTTP and HTTPS; the server's env holds the placeholder", async () => {
    const { plain, tls, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(pythonServer, hosts);
    // stored while unlocked: the running holder takes the secret and the CA just created
    await k.unlock(stateDir);
    await k.storeHttpSecret(stateDir, ...hosts);
    const gw = await k.gateway(dir, stateDir, { NODE_EXTRA_CA_CERTS: tls.caFile });
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
