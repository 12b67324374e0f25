// When the proxy releases, and when it does not: a timer in the server (no call in flight), a
// call the client cancelled, an undeclared host, a tool in approval mode none, a host the vault's
// policy names that the configuration does not declare for the scope, egress "declared-only", a rebuild before
// re-approval, `lock` in the middle of a call. And the record: egress events and `portcullis egress --json` per epoch.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Pending, pending } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { approvedCall, egressKit, nodeServer, PLACEHOLDER, released, SECRET, text } from "./egress-kit.js";

const k = egressKit();
afterEach(() => k.cleanupAll());

interface EgressJson {
  epochs: {
    serverLabel: string;
    epoch: string | null;
    destinations: {
      host: string;
      port: number;
      scheme: string;
      released: number;
      refused: number;
      scopes: string[];
    }[];
  }[];
}

async function egressJson(stateDir: string): Promise<EgressJson> {
  const r = await runCli(["egress", "api", "--json"], { stateDir });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as EgressJson;
}

describe("the release window", () => {
  it("a timer in the server never carries the value, during no call; an undeclared host never does; both are recorded per epoch", async () => {
    const { plain, other, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, hosts, { env: { EGRESS_TIMER_URL: `${plain.url}/timer` } });
    await k.storeHttpSecret(stateDir, ...hosts);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    const seen = new Set<string>();
    const r = await approvedCall(gw, stateDir, "fetch_url", { url: `${plain.url}/call` }, seen);
    expect(text(r)).toBe("200 upstream ok /call");
    expect(released(plain).map((x) => x.path)).toContain("/call");
    // the timer fetches one at a time: every tick numbered two past the last one received when
    // the call was answered started after the call ended
    const timer = () => plain.received.filter((x) => x.path === "/timer");
    const lastAtEnd = Math.max(0, ...timer().map((x) => x.seq ?? 0));
    await waitFor(
      () => timer().filter((x) => (x.seq ?? 0) >= lastAtEnd + 5).length > 0,
      10_000,
      "timer ticks",
    );
    const after = timer().filter((x) => (x.seq ?? 0) >= lastAtEnd + 2);
    expect(after.length).toBeGreaterThan(2);
    for (const t of after) {
      expect(t.authorization).toBe(`Bearer ${PLACEHOLDER}`);
      expect(t.key).toBe(PLACEHOLDER);
    }
    // an undeclared host, during an approved call: the placeholder, untouched
    expect(text(await approvedCall(gw, stateDir, "fetch_url", { url: `${other.url}/elsewhere` }, seen))).toBe(
      "200 upstream ok /elsewhere",
    );
    expect(other.received.map((x) => x.authorization)).toEqual([`Bearer ${PLACEHOLDER}`]);
    // the record: per epoch, every destination, the released scope named (never the value)
    const listed = await waitFor(
      async () => {
        const e = await egressJson(stateDir);
        const d = e.epochs[0]?.destinations ?? [];
        return d.some((x) => x.port === other.port) && d.some((x) => x.port === plain.port && x.released > 0)
          ? e
          : null;
      },
      10_000,
      "the egress record",
    );
    expect(listed.epochs).toHaveLength(1);
    const toPlain = listed.epochs[0]!.destinations.find((x) => x.port === plain.port)!;
    expect(toPlain).toMatchObject({ host: "127.0.0.1", scopes: ["inventory-api"] });
    expect(listed.epochs[0]!.destinations.find((x) => x.port === other.port)).toMatchObject({
      scheme: "tunnel",
      released: 0,
    });
    const human = await runCli(["egress"], { stateDir });
    expect(human.stdout).toContain(`127.0.0.1:${other.port}`);
    // the audit log holds egress events and credential_released with host and call, never the value
    await gw.close();
    const exported = await runCli(["audit", "export"], { stateDir });
    expect(exported.stdout).toContain('"type":"egress"');
    expect(exported.stdout).not.toContain(SECRET);
    const activity = await runCli(["audit", "activity", "--json"], {
      stateDir,
      env: (await import("../helpers/state.js")).passphraseEnv(),
    });
    expect(activity.stdout).not.toContain(SECRET);
    for (const out of [listed, human.stdout, gw.stderr()]) expect(JSON.stringify(out)).not.toContain(SECRET);
  });

  it("a call the client cancels closes its window at the cancel, though the server's work goes on", async () => {
    const { plain, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, hosts);
    await k.storeHttpSecret(stateDir, ...hosts);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    const flags = tempDir("portcullis-flag-");
    const stop = join(flags, "stop");
    const cancelled = join(flags, "cancelled");
    const abort = new AbortController();
    // the tool fetches again and again while its call runs, and does not stop when it is cancelled
    const call = approvedCall(
      gw,
      stateDir,
      "fetch_loop",
      { url: `${plain.url}/loop`, stop, cancelled },
      new Set(),
      { signal: abort.signal },
    );
    const ended = call.then(
      () => "answered",
      () => "rejected",
    );
    const loop = () => plain.received.filter((x) => x.path === "/loop");
    // inside the window: the call runs, its requests get the value
    await waitFor(() => released(plain).some((x) => x.path === "/loop"), 20_000, "a release in the call");
    abort.abort("the user gave up");
    expect(await ended).toBe("rejected");
    // the server got the cancellation the gateway forwards once it has taken the call as cancelled
    await waitFor(() => existsSync(cancelled), 10_000, "the cancellation at the server");
    // the tool fetches one at a time: every request numbered two past the last one received at
    // this point started after the cancellation
    const lastAtCancel = Math.max(0, ...loop().map((x) => x.seq ?? 0));
    await waitFor(
      () => loop().some((x) => (x.seq ?? 0) >= lastAtCancel + 5),
      10_000,
      "requests after the cancellation",
    );
    const after = loop().filter((x) => (x.seq ?? 0) >= lastAtCancel + 2);
    expect(after.length).toBeGreaterThan(2);
    for (const t of after) {
      expect(t.authorization).toBe(`Bearer ${PLACEHOLDER}`);
      expect(t.key).toBe(PLACEHOLDER);
    }
    writeFileSync(stop, "stop");
  });

  it('egress "declared-only": an undeclared host is refused (403), a declared one still gets the value', async () => {
    const { plain, other, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, hosts, { egress: "declared-only" });
    await k.storeHttpSecret(stateDir, ...hosts);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    const seen = new Set<string>();
    const refused = await approvedCall(gw, stateDir, "fetch_url", { url: `${other.url}/no` }, seen);
    expect(text(refused)).toMatch(/request failed|403/);
    const viaNode = await approvedCall(gw, stateDir, "https_get", { url: `${other.url}/no-either` }, seen);
    expect(text(viaNode)).toContain("403 portcullis egress:");
    expect(text(viaNode)).toContain("declared-only");
    expect(other.received).toEqual([]);
    expect(text(await approvedCall(gw, stateDir, "fetch_url", { url: `${plain.url}/yes` }, seen))).toBe(
      "200 upstream ok /yes",
    );
    expect(released(plain).map((x) => x.path)).toEqual(["/yes"]);
    // both refusals recorded: the CONNECT fetch made, and node:http's absolute-form request
    let last: EgressJson | null = null;
    const toOther = await waitFor(
      async () => {
        last = await egressJson(stateDir);
        const all = last.epochs[0]?.destinations ?? [];
        const d = all.filter((x) => x.port === other.port);
        return d.reduce((n, x) => n + x.refused, 0) >= 2 ? d : null;
      },
      10_000,
      "the refusals recorded",
    ).catch((e: Error) => {
      throw new Error(
        `${e.message}; the fetch said ${JSON.stringify(text(refused))}; egress --json: ${JSON.stringify(last)}`,
      );
    });
    expect(toOther.every((x) => x.released === 0)).toBe(true);
  });

  it("a call of a tool in approval mode none releases nothing: its requests carry the placeholder", async () => {
    const { plain, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, hosts, { approval: { default: "none" } });
    await k.storeHttpSecret(stateDir, ...hosts);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    // no grant: served at once (the vault is unlocked), with no human asked
    expect(
      text(await gw.client.callTool({ name: "fetch_url", arguments: { url: `${plain.url}/none` } })),
    ).toBe("200 upstream ok /none");
    expect(await pending(stateDir)).toEqual([]);
    const sent = plain.received.filter((x) => x.path === "/none");
    expect(sent.map((x) => [x.authorization, x.key])).toEqual([[`Bearer ${PLACEHOLDER}`, PLACEHOLDER]]);
    expect(released(plain)).toEqual([]);
  });

  it("a host the vault's policy names but the configuration does not declare for that scope gets the placeholder: both must agree", async () => {
    const { plain, other, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const otherHost = `127.0.0.1:${other.port}`;
    // portcullis.json: inventory-api for plain (and the TLS upstream) only; `other` is declared,
    // but for another scope, so the proxy reads requests to it
    const dir = k.project(nodeServer, hosts, {
      credentials: {
        API_KEY: { secret: "inventory-api", deliver: "http", hosts },
        OTHER_KEY: { secret: "other-api", deliver: "http", hosts: [otherHost] },
      },
    });
    // the vault's policy for inventory-api names `other` too
    await k.storeHttpSecret(stateDir, ...hosts, otherHost);
    const r = await runCli(["vault", "set", "other-api", "--from-stdin", "--host", otherHost], {
      stateDir,
      env: passphraseEnv(),
      input: "other-test-value-91c2e0aa",
    });
    expect(r.code, r.stderr).toBe(0);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    const seen = new Set<string>();
    expect(
      text(await approvedCall(gw, stateDir, "fetch_url", { url: `${other.url}/policy-only` }, seen)),
    ).toBe("200 upstream ok /policy-only");
    expect(other.received.map((x) => [x.authorization, x.key])).toEqual([
      [`Bearer ${PLACEHOLDER}`, PLACEHOLDER],
    ]);
    // the same call's scope, to a host both name, is released
    expect(text(await approvedCall(gw, stateDir, "fetch_url", { url: `${plain.url}/both` }, seen))).toBe(
      "200 upstream ok /both",
    );
    expect(released(plain).map((x) => x.path)).toEqual(["/both"]);
  });

  it("a host the configuration declares but the vault's policy does not name gets the placeholder: the holder refuses it, whatever portcullis.json says", async () => {
    // The other side of "both must agree": portcullis.json is a file any process of the user can
    // edit, the agent included; a host added to its "hosts" must not reach the secret. The holder
    // releases only for a host the stored policy names (vault set --host), which needs the passphrase.
    const { plain, other, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const otherHost = `127.0.0.1:${other.port}`;
    const dir = k.project(nodeServer, [...hosts, otherHost]);
    // (stored for both at first: `run` refuses to start a configuration naming a host the vault's
    // policy does not; then stored again, by the human, for the first hosts only, which the
    // running holder takes at once: the gateway's configuration still names the other)
    await k.storeHttpSecret(stateDir, ...hosts, otherHost);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    await k.storeHttpSecret(stateDir, ...hosts);
    const seen = new Set<string>();
    expect(
      text(await approvedCall(gw, stateDir, "fetch_url", { url: `${other.url}/config-only` }, seen)),
    ).toBe("200 upstream ok /config-only");
    expect(other.received.map((x) => [x.authorization, x.key])).toEqual([
      [`Bearer ${PLACEHOLDER}`, PLACEHOLDER],
    ]);
    expect(JSON.stringify(other.received)).not.toContain(SECRET);
    // a host both name, in the same session: released
    expect(text(await approvedCall(gw, stateDir, "fetch_url", { url: `${plain.url}/both` }, seen))).toBe(
      "200 upstream ok /both",
    );
    expect(released(plain).map((x) => x.path)).toEqual(["/both"]);
  });

  it("after a rebuild, before re-approval, nothing is released; lock stops releases in the middle of a call", async () => {
    const { plain, other, hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const startupUrl = join(tempDir("portcullis-startup-"), "url");
    const dir = k.project(nodeServer, hosts, {
      env: { EGRESS_TIMER_URL: `${plain.url}/timer`, EGRESS_STARTUP_URL_FILE: startupUrl },
      identity: { include: ["plugin.txt"] },
      onChange: "restart",
    });
    writeFileSync(join(dir, "plugin.txt"), "v1\n");
    await k.storeHttpSecret(stateDir, ...hosts);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    const seen = new Set<string>();
    expect(text(await approvedCall(gw, stateDir, "fetch_url", { url: `${plain.url}/v1` }, seen))).toBe(
      "200 upstream ok /v1",
    );
    // (a timer tick that happens to go out while the call runs is inside the window: see docs/security.md)
    const calls = () =>
      released(plain)
        .filter((x) => x.path !== "/timer")
        .map((x) => x.path);
    expect(calls()).toEqual(["/v1"]);
    // the approved epoch: the one that released to plain for /v1
    const approved = await waitFor(
      async () =>
        (await egressJson(stateDir)).epochs.find((e) =>
          e.destinations.some((d) => d.port === plain.port && d.released > 0),
        )?.epoch ?? null,
      10_000,
      "the approved epoch in the egress record",
    );
    // the rebuild: a new epoch; the old grant is stale, and the call waits for a human
    const mark = plain.received.length;
    // the new code also talks to a host the approved code never did
    writeFileSync(startupUrl, `${other.url}/new-code`);
    writeFileSync(join(dir, "plugin.txt"), "v2\n");
    await gw.waitForStderr(/new execution epoch/, 20_000);
    const recorded = await waitFor(
      async () => {
        const e = await egressJson(stateDir);
        return e.epochs.some((x) => x.destinations.some((d) => d.port === other.port)) ? e : null;
      },
      10_000,
      "the new destination recorded",
    );
    // the new code contacted it as it started, maybe before its epoch was recorded: it is filed
    // under the new epoch, never under the approved one (a review of the new code must see it)
    const filedUnder = recorded.epochs
      .filter((e) => e.destinations.some((d) => d.port === other.port))
      .map((e) => e.epoch);
    expect(filedUnder).toHaveLength(1);
    expect(filedUnder[0]).not.toBe(approved);
    expect(filedUnder[0]).not.toBeNull();
    const call = gw.client.callTool({ name: "fetch_url", arguments: { url: `${plain.url}/v2` } });
    let settled = false;
    call.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    const outcome = await waitFor(
      async (): Promise<{ pending: Pending } | { settled: boolean } | null> => {
        const p = (await pending(stateDir)).find((q) => !seen.has(q.request));
        if (p) return { pending: p };
        return settled ? { settled } : null;
      },
      20_000,
      "the stale refusal or a new approval request",
    );
    // refused as stale first (the grant belonged to the old epoch): ask again, which waits for a human
    const waiting =
      "pending" in outcome
        ? { call, request: outcome.pending }
        : await (async () => {
            const again = gw.client.callTool({ name: "fetch_url", arguments: { url: `${plain.url}/v2` } });
            again.catch(() => {});
            const p = await waitFor(
              async () => (await pending(stateDir)).find((q) => !seen.has(q.request)) ?? null,
              20_000,
              "the re-approval request",
            );
            return { call: again, request: p };
          })();
    seen.add(waiting.request.request);
    // the review names the destination the new epoch contacted and the approved one never did
    const review = (waiting.request as unknown as { review: { newDestinations?: string[] } }).review;
    expect(review.newDestinations).toEqual([`127.0.0.1:${other.port}`]);
    expect((await runCli(["approvals"], { stateDir })).stdout).toContain(
      `NEW egress  127.0.0.1:${other.port}`,
    );
    expect(other.received.map((x) => x.authorization)).toEqual([`Bearer ${PLACEHOLDER}`]);
    // while it waits, the new code's own requests (its timer) get the placeholder only
    await waitFor(
      () => plain.received.slice(mark).filter((x) => x.path === "/timer").length >= 3,
      10_000,
      "timer ticks",
    );
    expect(plain.received.slice(mark).filter((x) => x.authorization === `Bearer ${SECRET}`)).toEqual([]);
    expect(plain.received.slice(mark).some((x) => x.path === "/v2")).toBe(false);
    const { decideByCli } = await import("../helpers/approvals.js");
    await decideByCli(stateDir, "approve", waiting.request.request);
    expect(text(await waiting.call)).toBe("200 upstream ok /v2");
    expect(calls()).toEqual(["/v1", "/v2"]);
    // lock in the middle of a call: the first request gets the value, the second does not
    const flag = join(tempDir("portcullis-flag-"), "go");
    const twice = approvedCall(gw, stateDir, "fetch_url", { url: `${plain.url}/twice`, after: flag }, seen);
    await waitFor(() => plain.received.some((x) => x.path === "/twice"), 10_000, "the first request");
    expect((await runCli(["lock"], { stateDir })).code).toBe(0);
    writeFileSync(flag, "go");
    expect(existsSync(flag)).toBe(true);
    expect(text(await twice)).toBe("200 upstream ok /twice\n200 upstream ok /twice");
    const both = plain.received.filter((x) => x.path === "/twice");
    expect(both.map((x) => x.authorization)).toEqual([`Bearer ${SECRET}`, `Bearer ${PLACEHOLDER}`]);
  });
});
