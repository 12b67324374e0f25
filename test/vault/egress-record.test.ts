// The egress record's epochs (src/vault/egress/record.ts): a request a server makes while no epoch
// is live (booting before its epoch is recorded, or after the previous process went down) is held
// and filed under the epoch that starts next, never under the one before it: a review of the new
// code must see every host the new code contacted. On a real store and audit log. And a host named
// after a released value is recorded redacted: on the recorder, and through a real gateway.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/index.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import type { EventSink } from "../../src/gateway/events.js";
import { openStore, type Store } from "../../src/store/db.js";
import type { EgressRecord } from "../../src/vault/egress/proxy.js";
import { destinationsOfEpoch, EgressRecorder, listDestinations } from "../../src/vault/egress/record.js";
import { ReleasedValues } from "../../src/vault/scrub.js";
import { waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { holdStoreLock } from "../helpers/lock.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { egressKit, nodeServer } from "./egress-kit.js";
import { everyFile } from "./helpers.js";

const quiet = { info() {}, warn() {}, debug() {}, status() {} };

let stateDir: string;
let store: Store;
let events: EventSink;
let emitted: Record<string, unknown>[];

beforeEach(() => {
  stateDir = newStateDir();
  store = openStore(stateDir);
  const sink = auditSink(AuditLog.open(store, stateDir, { sync: "normal" }), quiet);
  emitted = [];
  events = {
    ...sink,
    emit: (e) => {
      emitted.push(e as unknown as Record<string, unknown>);
      sink.emit(e);
    },
  };
});
afterEach(() => {
  events.flush();
  store.close();
});

const request = (host: string, epoch: string | null): EgressRecord => ({
  host,
  port: 443,
  method: "GET",
  scheme: "tunnel",
  released: [],
  withheld: [],
  call: null,
  epoch,
  outcome: "tunnelled",
});

describe("the egress record's epochs", () => {
  it("files what came before an epoch was recorded under that epoch, not under the one before it", () => {
    const r = new EgressRecorder(store, "api", events, 60_000);
    r.epochStarted("E1");
    r.record(request("old.example", "E1"));
    // E1's process went down; the new code boots and contacts a host the old one never did
    r.record(request("new.example", null));
    r.flush();
    expect(listDestinations(store, "api").map((d) => [d.epoch, d.host])).toEqual([["E1", "old.example"]]);
    expect(emitted.filter((e) => e.type === "egress").map((e) => e.host)).toEqual(["old.example"]);

    r.epochStarted("E2");
    r.flush();
    expect(destinationsOfEpoch(store, "E2")).toEqual(new Set(["new.example:443"]));
    expect(destinationsOfEpoch(store, "E1")).toEqual(new Set(["old.example:443"]));
    expect(emitted.filter((e) => e.type === "egress").map((e) => [e.epoch, e.host])).toEqual([
      ["E1", "old.example"],
      ["E2", "new.example"],
    ]);
  });

  it("keeps the time each held request was made", async () => {
    const r = new EgressRecorder(store, "api", events, 60_000);
    r.record(request("early.example", null));
    const before = new Date().toISOString();
    await new Promise((done) => setTimeout(done, 20));
    r.epochStarted("E1");
    r.close();
    const [row] = listDestinations(store, "api");
    expect(row).toMatchObject({ epoch: "E1", host: "early.example" });
    expect(row!.firstAt <= before).toBe(true);
  });

  it("records what is still held under no epoch when the gateway closes before any epoch", () => {
    const r = new EgressRecorder(store, "api", events, 60_000);
    r.record(request("never.example", null));
    r.close();
    expect(listDestinations(store, "api").map((d) => [d.epoch, d.host])).toEqual([["", "never.example"]]);
    expect(emitted.find((e) => e.type === "egress")).toMatchObject({ epoch: null, host: "never.example" });
  });

  it("holds a bounded number: beyond it the oldest are recorded under no epoch", () => {
    const r = new EgressRecorder(store, "api", events, 60_000);
    r.record(request("first.example", null));
    for (let i = 0; i < 10_000; i++) r.record(request("loop.example", null));
    r.flush();
    expect(listDestinations(store, "api").map((d) => [d.epoch, d.host])).toEqual([["", "first.example"]]);
    r.epochStarted("E1");
    r.flush();
    const loop = listDestinations(store, "api").find((d) => d.host === "loop.example");
    expect(loop).toMatchObject({ epoch: "E1", requests: 10_000 });
  });
});

describe("the index table while another process writes the store", () => {
  const refused = (host: string): EgressRecord => ({
    ...request(host, "E1"),
    method: "CONNECT",
    outcome: "refused",
    status: 403,
  });

  it("waits for the write lock as any writer does: a refusal recorded meanwhile is not lost", async () => {
    const r = new EgressRecorder(store, "api", events, 60_000);
    r.epochStarted("E1");
    r.record(refused("undeclared.example"));
    // an `approve`, or any command opening the store, holds the lock for a moment
    await holdStoreLock(stateDir, 300);
    r.flush();
    expect(listDestinations(store, "api").map((d) => [d.host, d.requests, d.refused])).toEqual([
      ["undeclared.example", 1, 1],
    ]);
  });

  it("keeps what it could not write, and writes it with the next batch", async () => {
    const r = new EgressRecorder(store, "api", events, 60_000);
    r.epochStarted("E1");
    const timeout = Number(store.pragma("busy_timeout", { simple: true }));
    store.pragma("busy_timeout = 50");
    const lock = await holdStoreLock(stateDir);
    try {
      r.record(refused("undeclared.example"));
      r.flush(); // the lock outlasts the busy timeout: nothing written
    } finally {
      await lock.release();
      store.pragma(`busy_timeout = ${timeout}`);
    }
    expect(listDestinations(store, "api")).toEqual([]);
    r.record(refused("undeclared.example"));
    r.flush();
    expect(listDestinations(store, "api").map((d) => [d.host, d.requests, d.refused])).toEqual([
      ["undeclared.example", 2, 2],
    ]);
  });

  it("its timer's batches wait for a lock held by another program only briefly: the event loop goes on, and the counts are written once the lock goes", async () => {
    // Before, each batch waited the whole busy timeout (20 s here) with the event loop held: this
    // test's own timers (its wait below, its 10 s timeout) stopped with it.
    const r = new EgressRecorder(store, "api", events, 10);
    r.epochStarted("E1");
    const timeout = Number(store.pragma("busy_timeout", { simple: true }));
    store.pragma("busy_timeout = 20000");
    const lock = await holdStoreLock(stateDir);
    try {
      r.record(refused("undeclared.example"));
      let ticks = 0;
      const tick = setInterval(() => ticks++, 5);
      await waitFor(() => ticks >= 20, 5_000, "the event loop's timers, a batch tried meanwhile");
      clearInterval(tick);
      expect(listDestinations(store, "api")).toEqual([]);
    } finally {
      await lock.release();
    }
    await waitFor(() => listDestinations(store, "api").length === 1, 5_000, "the kept batch written");
    store.pragma(`busy_timeout = ${timeout}`);
    expect(listDestinations(store, "api").map((d) => [d.host, d.requests])).toEqual([
      ["undeclared.example", 1],
    ]);
  }, 10_000);
});

describe("a destination's row another process damaged", () => {
  it("its scopes column no JSON or no list: shown as none, and the next batches counted and written anew", () => {
    const r = new EgressRecorder(store, "api", events, 60_000);
    r.epochStarted("E1");
    r.record({ ...request("api.example", "E1"), released: ["api_token"] });
    r.flush();
    for (const damaged of ["{", '{"a":1}', "[1]"]) {
      store.prepare("UPDATE egress_destinations SET scopes_json = ?").run(damaged);
      expect(listDestinations(store, "api").map((d) => d.scopes)).toEqual([[]]);
      r.record({ ...request("api.example", "E1"), released: ["api_token"] });
      r.flush();
      expect(listDestinations(store, "api").map((d) => [d.requests, d.scopes])).toEqual([
        [expect.any(Number), ["api_token"]],
      ]);
    }
    expect(listDestinations(store, "api")[0]!.requests).toBe(4);
  });
});

describe("a host named after a released value", () => {
  it("is recorded with the value redacted, in any case, in the index table and the audit event", () => {
    // as src/vault/egress/forServer.ts builds it: hosts go through the gateway's released values
    const released = new ReleasedValues();
    released.add("api-token", "S3cr3tV4lue-zq9XwK7p");
    const r = new EgressRecorder(store, "api", events, 60_000, (host) => released.scrubHost(host));
    r.epochStarted("E1");
    // a server with the value in its environment names hosts after it (URL parsers lower-case them)
    r.record(request("s3cr3tv4lue-zq9xwk7p.evil.example", "E1"));
    r.record(request(`${Buffer.from("S3cr3tV4lue-zq9XwK7p").toString("hex")}.evil.example`, null));
    r.epochStarted("E2");
    r.flush();
    const hosts = listDestinations(store, "api").map((d) => d.host);
    const logged = emitted.filter((e) => e.type === "egress").map((e) => e.host);
    for (const shown of [hosts, logged])
      expect(shown.sort()).toEqual([
        "[redacted:api-token].evil.example",
        "[redacted:api-token].evil.example",
      ]);
    expect(JSON.stringify(emitted).toLowerCase()).not.toContain("s3cr3tv4lue");
  });
});

describe("a host named after a released value, through a real gateway", () => {
  const k = egressKit();
  afterEach(() => k.cleanupAll());

  it("is recorded redacted in portcullis egress, the audit and every file of the state directory", async () => {
    // an env-delivered value (released at spawn) beside the HTTP one, so that the proxy runs
    const VALUE = "EnvHostValue-4k9ZqT7w";
    const { hosts } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, hosts, {
      credentials: {
        API_KEY: { secret: "inventory-api", deliver: "http", hosts },
        ENV_KEY: { secret: "env-token", deliver: "env" },
      },
      // no approval request, which would keep the client's arguments (they are not the server's words)
      approval: { default: "none" },
    });
    await k.storeHttpSecret(stateDir, ...hosts);
    const set = await runCli(["vault", "set", "env-token", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: passphraseEnv(),
      input: VALUE,
    });
    expect(set.code, set.stderr).toBe(0);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    // a host named after the value (URL parsers lower-case it); .invalid never resolves
    const host = `${VALUE.toLowerCase()}.invalid`;
    await gw.client.callTool({ name: "fetch_url", arguments: { url: `http://${host}/x` } });
    const shown = await waitFor(
      async () => {
        const r = await runCli(["egress", "api", "--json"], { stateDir });
        expect(r.code, r.stderr).toBe(0);
        return r.stdout.includes(".invalid") ? r.stdout : null;
      },
      10_000,
      "the request recorded",
    );
    expect(shown).toContain("[redacted:env-token].invalid");
    await gw.close();
    const exported = await runCli(["audit", "export"], { stateDir });
    expect(exported.code, exported.stderr).toBe(0);
    for (const out of [shown, exported.stdout, gw.stderr()])
      expect(out.toLowerCase()).not.toContain(VALUE.toLowerCase());
    for (const f of everyFile(stateDir))
      expect(f.text.toLowerCase(), f.path).not.toContain(VALUE.toLowerCase());
  });
});
