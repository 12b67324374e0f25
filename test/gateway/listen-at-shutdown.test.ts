// A 2026-07-28 client's subscriptions/listen still open when the gateway shuts down (the client
// closes its input, or a signal) gets the end a server gives its listens at its own shutdown: a
// result for the listen's id, `resultType` "complete", `_meta` naming the subscription
// (docs/protocol-eras.md). Real gateway, real fixture server (exhaust.mjs: it takes a listen and
// never answers it; `deaf`, `hang`), a raw client on plain pipes.
//
// What failed before: every such listen got no answer at all, its client left waiting until the
// output closed, while a call at the server got `shutting_down`; and the same for a listen
// written to a server that reads none of its input.
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { startExhaustGateway } from "../helpers/exhaustGateway.js";
import { waitFor } from "../helpers/files.js";
import { modernMeta } from "../helpers/modernMeta.js";

const SUB = "io.modelcontextprotocol/subscriptionId";
const META = modernMeta();

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A gateway in front of the exhaust fixture, its client in the 2026-07-28 era, its catalog listed. */
async function startModern() {
  const g = startExhaustGateway(
    { label: "listens", args: ["--hold-timeout", "1000"], stderr: "collected" },
    (end) => cleanup.push(end),
  );
  g.send({ jsonrpc: "2.0", id: "list", method: "tools/list", params: { _meta: META } });
  expect((await g.answer("list")).result).toBeDefined();
  const listen = (id: string, notifications: object) =>
    g.send({ jsonrpc: "2.0", id, method: "subscriptions/listen", params: { _meta: META, notifications } });
  const call = (id: string, name: string) =>
    g.send({ jsonrpc: "2.0", id, method: "tools/call", params: { _meta: META, name, arguments: {} } });
  /** Its listens taken by the server: a ping behind them answered (it reads in order; the fixture refuses a ping). */
  const read = async (id: string) => {
    g.send({ jsonrpc: "2.0", id, method: "ping", params: { _meta: META } });
    await g.answer(id);
  };
  return { g, listen, call, read };
}

/** The end a listen gets at the gateway's shutdown. */
const ended = (id: string) => ({
  jsonrpc: "2.0",
  id,
  result: { resultType: "complete", _meta: { [SUB]: id } },
});

describe("a subscriptions/listen open when the gateway shuts down", () => {
  it("gets the end of a server's shutdown when the client closes its input, as a call at the server gets shutting_down", async () => {
    const { g, listen, call, read } = await startModern();
    listen("tools", { toolsListChanged: true });
    // one that names a resource: decided by the guard, then written as the other
    listen("doc", { resourceSubscriptions: ["exhaust://doc"] });
    call("hang", "hang");
    // A guarded listen is written once its decision is recorded: a ping sent at once could pass it
    // (relayed as it comes), and the client close its input while the listen was still decided (a
    // loaded CI machine: the listen then got the refusal of a connection ended before it was
    // decided, which is not the case under test). Its record first, then the ping behind it.
    await waitFor(
      async () =>
        (await auditEvents(g.stateDir)).some(
          (e) => e.type === "request_forwarded" && e.requestId === "doc",
        ) || undefined,
      20_000,
      "the listen naming a resource recorded to be forwarded",
    );
    await read("ping");
    await waitFor(() => g.stderr().includes("[exhaust]"), 10_000, "the server's stderr");
    // before: neither listen got any answer
    await g.end();
    expect(g.answers.get("tools")).toEqual(ended("tools"));
    expect(g.answers.get("doc")).toEqual(ended("doc"));
    expect(g.answers.get("hang")?.error?.data?.error).toBe("shutting_down");
  }, 30_000);

  it("gets it as well when a signal ends the gateway, written to a server that reads none of its input", async () => {
    const { g, listen, call } = await startModern();
    call("deaf", "deaf");
    await waitFor(() => g.answers.get("deaf"), 10_000, "the deaf call's answer");
    // written to it, never read: the server could not end it even if it would
    listen("unread", { toolsListChanged: true });
    const closed = new Promise<void>((resolve) => g.gw.once("close", () => resolve()));
    // (the listen is written with the ping, in the order they came)
    g.send({ jsonrpc: "2.0", id: "ping", method: "ping", params: { _meta: META } });
    await waitFor(() => g.stderr().includes("[exhaust]"), 10_000, "the server's stderr");
    g.gw.kill("SIGTERM");
    await closed;
    // before: no answer at all (the ping, written to a server that reads nothing, is answered
    // as its process went away)
    expect(g.answers.get("unread")).toEqual(ended("unread"));
    expect(g.answers.get("ping")?.error).toBeDefined();
  }, 30_000);
});
