// `portcullis revoke` takes a session grant away at once, for the call in flight too. With HTTP
// delivery the value is released per request, while the granted call is in flight, and the server
// decides when that call ends: one that never answers would keep the window open if the window
// looked only at the call. Revoking closes it: the call's next requests carry the placeholder, as
// after `lock`. Real gateway, real vault, the unmodified Node egress fixture and a real upstream.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import { approvedCall, egressKit, nodeServer, PLACEHOLDER, released } from "./egress-kit.js";

const k = egressKit();
afterEach(() => k.cleanupAll());

describe("a session grant revoked while its call is in flight (HTTP delivery)", () => {
  it("the call's next requests carry the placeholder", async () => {
    const { plain, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, hosts);
    await k.storeHttpSecret(stateDir, ...hosts);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    const stop = join(tempDir("portcullis-flag-"), "stop");
    k.cleanup.push(() => writeFileSync(stop, "stop"));
    const call = approvedCall(gw, stateDir, "fetch_loop", { url: `${plain.url}/loop`, stop }, new Set());
    call.catch(() => {});
    const loop = () => plain.received.filter((x) => x.path === "/loop");
    await waitFor(() => released(plain).some((x) => x.path === "/loop"), 20_000, "a release in the call");
    const listed = await runCli(["grants", "--json"], { stateDir });
    const grants = JSON.parse(listed.stdout).grants as { grant: string }[];
    expect(grants).toHaveLength(1);
    await decideByCli(stateDir, "revoke", grants[0]!.grant);
    // one request at a time: those numbered two past the last one received now began after the revoke
    const lastAtRevoke = Math.max(0, ...loop().map((x) => x.seq ?? 0));
    await waitFor(
      () => loop().some((x) => (x.seq ?? 0) >= lastAtRevoke + 5),
      10_000,
      "requests after the revoke",
    );
    const after = loop().filter((x) => (x.seq ?? 0) >= lastAtRevoke + 2);
    expect(after.length).toBeGreaterThan(2);
    for (const t of after) expect(t.authorization).toBe(`Bearer ${PLACEHOLDER}`);
  }, 90_000);

  it("a call approved once (per-call) keeps its release for its whole life: its grant ends as it goes out, not its window", async () => {
    const { plain, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, hosts, { approval: { default: "per-call" } });
    await k.storeHttpSecret(stateDir, ...hosts);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    const stop = join(tempDir("portcullis-flag-"), "stop");
    k.cleanup.push(() => writeFileSync(stop, "stop"));
    const call = approvedCall(gw, stateDir, "fetch_loop", { url: `${plain.url}/loop`, stop }, new Set());
    call.catch(() => {});
    const loop = () => plain.received.filter((x) => x.path === "/loop");
    await waitFor(() => loop().length >= 6, 20_000, "six requests in the call");
    writeFileSync(stop, "stop");
    await call;
    const seen = loop();
    expect(seen.length).toBeGreaterThanOrEqual(6);
    for (const t of seen) expect(t.authorization).not.toBe(`Bearer ${PLACEHOLDER}`);
  }, 90_000);
});
