// 2026-07-28 (basic/patterns/subscriptions): a client that wants to hear of prompt- or
// resource-list changes asks for them in its subscriptions/listen (`promptsListChanged`,
// `resourcesListChanged`), and the acknowledgement says which the server honours (the v2 server
// only those its capabilities announce: `prompts.listChanged`, `resources.listChanged`). Behind the
// gateway the server is a process the gateway may replace: a new process offers whatever prompts
// and resources its code offers now, and announces no change (for it nothing changed). A legacy
// client is told to list them again (test/gateway/spec-lists-after-epoch.test.ts); a modern
// client's listens were not: each listen re-opened on the new process now gets the tagged
// `notifications/prompts/list_changed` / `notifications/resources/list_changed` for the types its
// last acknowledgement honoured, and no other (a server MUST NOT send types the client did not ask
// for). Real gateway, raw client, the v2-SDK fixture modern.mjs (FIXTURE_LIST_CHANGED=1: the prompts
// and resources capabilities announce listChanged).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { modernMeta, subscriptionOf } from "../helpers/modernMeta.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { serving } from "../helpers/serving.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const META = modernMeta({}, { name: "listen-lists-test", version: "1.0.0" });
const SUB = "io.modelcontextprotocol/subscriptionId";
const A = "test://a";
const PROMPTS = "notifications/prompts/list_changed";
const RESOURCES = "notifications/resources/list_changed";

/** A gateway in front of modern.mjs with prompt p1 and resource A; `announces`: their capabilities announce listChanged. */
function gateway(announces: boolean): RawGateway {
  const dir = tempDir();
  writeFileSync(
    join(dir, "portcullis.json"),
    JSON.stringify({
      servers: {
        modern: {
          command: NODE,
          args: [FIXTURES.modern],
          env: {
            FIXTURE_PROMPTS: "p1",
            FIXTURE_RESOURCES: A,
            ...(announces ? { FIXTURE_LIST_CHANGED: "1" } : {}),
          },
          approval: { default: "none", resources: "none" },
        },
      },
    }),
  );
  const gw = rawGateway({ args: ["modern"], cwd: dir, env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "20" } });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  return gw;
}

/** The messages of `method` the client got (on the listen `id` when given; `null`: on none). */
function got(gw: RawGateway, method: string, id?: string | null): WireMessage[] {
  return gw
    .messages()
    .filter(
      (m) =>
        m.method === method &&
        (id === undefined || (id === null ? subscriptionOf(m) === undefined : subscriptionOf(m) === id)),
    );
}

const LISTENS: Record<string, Record<string, unknown>> = {
  "listen:all": { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true },
  "listen:prompts": { promptsListChanged: true },
  "listen:tools": { toolsListChanged: true },
  // with a resource subscription: decided by the guard again before it is re-opened
  "listen:res": { resourcesListChanged: true, resourceSubscriptions: [A] },
};

/** Opens every listen of LISTENS, and resolves with their first acknowledgements once all came. */
async function openListens(gw: RawGateway): Promise<Record<string, Record<string, unknown>>> {
  const listed = await gw.request("tools/list", { _meta: META }, 30_000);
  expect(listed.error, JSON.stringify(listed)).toBeUndefined();
  for (const [id, notifications] of Object.entries(LISTENS))
    gw.send({ jsonrpc: "2.0", id, method: "subscriptions/listen", params: { notifications, _meta: META } });
  const honoured: Record<string, Record<string, unknown>> = {};
  for (const id of Object.keys(LISTENS)) {
    const ack = await waitFor(
      () => got(gw, "notifications/subscriptions/acknowledged", id)[0],
      20_000,
      `the acknowledgement of ${id}`,
    );
    honoured[id] = (ack.params as { notifications: Record<string, unknown> }).notifications;
  }
  return honoured;
}

/** Kills the server process, and resolves once every listen was acknowledged again by the next one. */
async function newProcess(gw: RawGateway): Promise<void> {
  const first = serving(gw);
  // each listen's acknowledgements so far: the re-open on the new process adds one (the second
  // new process's wait must not be met by the first's)
  const acks = (id: string) => got(gw, "notifications/subscriptions/acknowledged", id);
  const before = new Map(Object.keys(LISTENS).map((id) => [id, acks(id).length]));
  process.kill(first.pid, "SIGKILL");
  await waitFor(() => serving(gw).epoch !== first.epoch || undefined, 20_000, "the next epoch");
  for (const id of Object.keys(LISTENS))
    await waitFor(() => acks(id)[before.get(id)!], 20_000, `the re-opened ${id}'s acknowledgement`);
  // a round trip after the re-opens: whatever they sent the client came before its answer
  const again = await gw.request("tools/list", { _meta: META }, 30_000);
  expect(again.error, JSON.stringify(again)).toBeUndefined();
}

/** A gateway in front of lenient.mjs, whose acknowledgements claim prompt and resource list changes nobody asked for. */
function claimingGateway(): RawGateway {
  const dir = tempDir();
  writeFileSync(
    join(dir, "portcullis.json"),
    JSON.stringify({
      servers: {
        lenient: {
          command: NODE,
          args: [FIXTURES.lenient],
          env: { FIXTURE_LISTEN_OPEN: "1", FIXTURE_LISTEN_CLAIM: "1" },
          approval: { default: "none", resources: "none" },
        },
      },
    }),
  );
  const gw = rawGateway({ args: ["lenient"], cwd: dir, env: { PORTCULLIS_RESPAWN_BACKOFF_MS: "20" } });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  return gw;
}

describe("a 2026-07-28 client's listens after a new server process", () => {
  it("each re-opened listen is told that the prompt and resource lists changed, for the types its acknowledgement honoured, once", async () => {
    const gw = gateway(true);
    const honoured = await openListens(gw);
    // the premise: the server honours what each listen asked for
    expect(honoured["listen:all"]).toEqual(LISTENS["listen:all"]);
    expect(honoured["listen:prompts"]).toEqual({ promptsListChanged: true });
    expect(honoured["listen:res"]).toEqual(LISTENS["listen:res"]);
    // nothing announced on the first process
    expect(got(gw, PROMPTS)).toEqual([]);
    expect(got(gw, RESOURCES)).toEqual([]);

    await newProcess(gw);
    expect(got(gw, PROMPTS, "listen:all")).toHaveLength(1);
    expect(got(gw, PROMPTS, "listen:prompts")).toHaveLength(1);
    expect(got(gw, RESOURCES, "listen:all")).toHaveLength(1);
    expect(got(gw, RESOURCES, "listen:res")).toHaveLength(1);
    // none to a listen that did not ask, none unsolicited
    expect(got(gw, PROMPTS)).toHaveLength(2);
    expect(got(gw, RESOURCES)).toHaveLength(2);
    // the shape the specification gives: only the subscription id in _meta
    expect(got(gw, PROMPTS, "listen:prompts")[0]).toEqual({
      jsonrpc: "2.0",
      method: PROMPTS,
      params: { _meta: { [SUB]: "listen:prompts" } },
    });
    // the client lists again: the new process answers
    const prompts = await gw.request("prompts/list", { _meta: META }, 30_000);
    expect(prompts.result).toMatchObject({ prompts: [{ name: "p1" }] });

    // and again on the process after it (the honoured filter outlives a re-open)
    await newProcess(gw);
    expect(got(gw, PROMPTS, "listen:all")).toHaveLength(2);
    expect(got(gw, PROMPTS, "listen:prompts")).toHaveLength(2);
    expect(got(gw, RESOURCES, "listen:all")).toHaveLength(2);
    expect(got(gw, RESOURCES, "listen:res")).toHaveLength(2);
    expect(got(gw, PROMPTS)).toHaveLength(4);
    expect(got(gw, RESOURCES)).toHaveLength(4);
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 120_000);

  it("a type the server did not honour (its capabilities announce no listChanged) is not announced", async () => {
    const gw = gateway(false);
    const honoured = await openListens(gw);
    // the premise: the v2 server narrows the filter to its capabilities
    expect(honoured["listen:all"]).toEqual({ toolsListChanged: true });
    expect(honoured["listen:res"]).toEqual({ resourceSubscriptions: [A] });
    await newProcess(gw);
    expect(got(gw, PROMPTS)).toEqual([]);
    expect(got(gw, RESOURCES)).toEqual([]);
  }, 120_000);

  it("a type the acknowledgement claims but the listen never asked for is not announced", async () => {
    const gw = claimingGateway();
    const listed = await gw.request("tools/list", { _meta: META }, 30_000);
    expect(listed.error, JSON.stringify(listed)).toBeUndefined();
    gw.send({
      jsonrpc: "2.0",
      id: "listen:tools",
      method: "subscriptions/listen",
      params: { notifications: { toolsListChanged: true }, _meta: META },
    });
    const ack = await waitFor(
      () => got(gw, "notifications/subscriptions/acknowledged", "listen:tools")[0],
      20_000,
      "the acknowledgement",
    );
    // the premise: the server claims what nobody asked for
    expect((ack.params as { notifications: unknown }).notifications).toMatchObject({
      promptsListChanged: true,
    });
    const first = serving(gw);
    process.kill(first.pid, "SIGKILL");
    await waitFor(() => serving(gw).epoch !== first.epoch || undefined, 20_000, "the next epoch");
    await waitFor(
      () => got(gw, "notifications/subscriptions/acknowledged", "listen:tools")[1],
      20_000,
      "the re-opened listen's acknowledgement",
    );
    await gw.request("ping", { _meta: META }, 30_000);
    expect(got(gw, PROMPTS)).toEqual([]);
    expect(got(gw, RESOURCES)).toEqual([]);
  }, 120_000);
});
