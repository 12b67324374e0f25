// NODE_TLS_REJECT_UNAUTHORIZED=0 in the gateway's environment (a host config's "env", a user's
// shell) and the egress proxy: the proxy's own connection to an upstream must still verify its
// certificate before a released value goes out on it. Real gateway, real fixture server, a real
// HTTPS upstream on loopback whose CA the gateway is not given.
import { afterEach, describe, expect, it } from "vitest";
import { newStateDir } from "../helpers/state.js";
import { approvedCall, egressKit, nodeServer, released, text } from "./egress-kit.js";

const k = egressKit();
afterEach(() => k.cleanupAll());

describe("an environment that turns off node's certificate checks", () => {
  it("NODE_TLS_REJECT_UNAUTHORIZED=0: an upstream whose certificate is not trusted never gets the value", async () => {
    const { tls, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, hosts);
    await k.storeHttpSecret(stateDir, ...hosts);
    await k.unlock(stateDir);
    // no NODE_EXTRA_CA_CERTS naming the upstream's CA: not trusted
    const gw = await k.gateway(dir, stateDir, { NODE_TLS_REJECT_UNAUTHORIZED: "0", NODE_NO_WARNINGS: "1" });
    const seen = new Set<string>();
    const r = await approvedCall(gw, stateDir, "fetch_url", { url: `${tls.url}/untrusted` }, seen).catch(
      (e: Error) => e,
    );
    expect(released(tls), "the value went to an upstream whose certificate is not trusted").toEqual([]);
    expect(r instanceof Error ? r.message : text(r)).not.toMatch(/^200 /);
  });
});
