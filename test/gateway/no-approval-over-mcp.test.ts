// "No MCP tool exposes approval" (docs/security.md, "The agent approving itself without the
// passphrase"), attacked end to end: a real gateway in front of the lenient fixture (a server that
// answers every method and every tool name, and logs each method it receives), a call of its tool
// waiting for a human, and the agent's own client (a raw peer on the gateway's stdin/stdout) trying
// every way the wire offers to decide that request itself: a tool named like an approval, a
// JSON-RPC method named like one (the console's own route included), a forged answer to the
// gateway's URL elicitation, a forged `notifications/elicitation/complete`, and a legacy call
// carrying the 2026-07-28 era's `requestState` of the request. Each must leave the request
// pending, no grant and no decision in the store or the audit, and the held call unanswered and
// unsent; then the real CLI (`portcullis approve`) still decides it, so the request was live all
// along.
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { consoleAddressPath, writeConsoleAddress } from "../../src/console/address.js";
import { openStoreToRead } from "../../src/store/db.js";
import { auditEvents, decideByCli, nextStoredRequest, pending } from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, type RawPeer, rawGateway, rawPeer } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** Stands for a running console (nothing listens there): the gateway then sends URL elicitations. */
const CONSOLE = "http://127.0.0.1:45997";
const METHOD_NOT_FOUND = -32601;

interface Logged {
  method: string;
  params: Record<string, unknown> | null;
}

/** The request's row and every grant, read from the store. */
function stored(stateDir: string, request: string) {
  const db = openStoreToRead(stateDir);
  try {
    return {
      row: db
        .prepare(
          "SELECT state, decided_at, decided_by, decision_for, reason, grant_id, decision_signature FROM approval_requests WHERE request = ?",
        )
        .get(request),
      requests: db.prepare("SELECT request, tool, state FROM approval_requests ORDER BY created_at").all(),
      grants: db.prepare("SELECT grant_id FROM grants").all(),
    };
  } finally {
    db.close();
  }
}

const UNDECIDED = {
  state: "pending",
  decided_at: null,
  decided_by: null,
  decision_for: null,
  reason: null,
  grant_id: null,
  decision_signature: null,
};

/** The lenient server's tools/list, asked directly (no gateway): the list the agent must see. */
async function serversOwnTools(): Promise<unknown> {
  const direct: RawPeer = rawPeer(NODE, [FIXTURES.lenient]);
  try {
    await direct.initialize();
    const r = await direct.request("tools/list", {});
    expect(r.error).toBeUndefined();
    return r.result.tools;
  } finally {
    await direct.close();
  }
}

interface Held {
  peer: RawGateway;
  stateDir: string;
  request: string;
  elicitation: WireMessage;
  received: () => Logged[];
  /** asserts that the request is still waiting for a human, and nothing was decided or sent */
  stillPending: (what: string) => void;
}

/**
 * A gateway (session approval, the default) in front of the lenient fixture, its client declaring
 * URL elicitation; the client's call of `echo` waits for a human under request `request`, and the
 * gateway has sent the client to the console page of that request.
 */
async function heldCall(): Promise<Held> {
  const stateDir = newStateDir();
  writeConsoleAddress(stateDir, CONSOLE);
  cleanup.push(() => rmSync(consoleAddressPath(stateDir), { force: true }));
  const dir = tempDir();
  cleanup.push(() => removeDir(dir));
  const methodLog = join(dir, "methods.jsonl");
  const peer = rawGateway({
    args: ["--label", "lenient", "--approval-timeout", "55000", "--", NODE, FIXTURES.lenient],
    env: { FIXTURE_METHOD_LOG: methodLog },
    stateDir,
  });
  cleanup.push(() => peer.close());
  cleanup.push(() => removeDir(stateDir));
  const init = await peer.initialize({ capabilities: { elicitation: { url: {} } } });
  expect(init.error).toBeUndefined();
  const listed = await peer.request("tools/list", {});
  expect(listed.result.tools.map((t: { name: string }) => t.name)).toEqual(["echo"]);
  peer.send({
    jsonrpc: "2.0",
    id: "held",
    method: "tools/call",
    params: { name: "echo", arguments: { message: "held" } },
  });
  const req = await nextStoredRequest(stateDir);
  expect(req.tool).toBe("echo");
  const elicitation = await peer.next((m) => m.method === "elicitation/create", 20_000);
  expect(elicitation.params).toMatchObject({ mode: "url", url: `${CONSOLE}/requests/${req.request}` });
  const received = () => (existsSync(methodLog) ? readJsonLines<Logged>(methodLog) : []);
  const stillPending = (what: string) => {
    const s = stored(stateDir, req.request);
    expect(s.row, what).toEqual(UNDECIDED);
    expect(s.grants, what).toEqual([]);
    // the client was not told the request is decided
    expect(
      peer.messages().filter((m) => m.method === "notifications/elicitation/complete"),
      what,
    ).toEqual([]);
    // the held call: no answer, and never sent to the server
    expect(
      peer.messages().filter((m) => m.id === "held"),
      what,
    ).toEqual([]);
    expect(
      received().filter((r) => r.method === "tools/call" && JSON.stringify(r.params).includes('"held"')),
      what,
    ).toEqual([]);
  };
  stillPending("before any attempt");
  return { peer, stateDir, request: req.request, elicitation, received, stillPending };
}

/**
 * The end of every attempt: a ping answered (the gateway has read everything sent before it), the
 * request still pending, listed by the real `portcullis approvals --json`, then approved by the
 * real CLI: the held call proceeds, so it was waiting on that very request all along. The audit
 * holds exactly one decision, the CLI's.
 */
async function onlyTheHumanDecides(h: Held): Promise<void> {
  const pong = await h.peer.request("ping");
  expect(pong.error).toBeUndefined();
  h.stillPending("after every attempt");
  expect((await pending(h.stateDir)).map((p) => p.request)).toContain(h.request);
  const before = (await auditEvents(h.stateDir)).map((e) => e.type);
  expect(before.filter((t) => t === "approval_granted" || t === "approval_denied")).toEqual([]);
  await decideByCli(h.stateDir, "approve", h.request, "--for", "call");
  const answer = await h.peer.next((m) => m.id === "held", 30_000);
  expect(answer.error).toBeUndefined();
  expect(JSON.stringify(answer.result)).toContain("held");
  const granted = (await auditEvents(h.stateDir)).filter((e) => e.type === "approval_granted");
  expect(granted).toHaveLength(1);
}

describe("no MCP tool or method decides an approval request", () => {
  it("tools/list while a request is pending is exactly the server's own list: the gateway adds no tool", async () => {
    const own = await serversOwnTools();
    const h = await heldCall();
    const listed = await h.peer.request("tools/list", {});
    expect(listed.error).toBeUndefined();
    expect(listed.result.tools).toEqual(own);
    // and a second page does not exist either (no gateway tool hidden behind a cursor)
    expect(listed.result.nextCursor).toBeUndefined();
    h.stillPending("after tools/list");
    await onlyTheHumanDecides(h);
  });

  it("tools/call of a tool named like an approval, with the request id as argument (or as the name), is refused and decides nothing", async () => {
    const h = await heldCall();
    const names = [
      "approve",
      "Approve",
      "portcullis_approve",
      "portcullis/approve",
      "portcullis.approve",
      "portcullis-approve",
      "portcullis approve",
      "approve_request",
      "approval/approve",
      "decide",
      "portcullis_decide",
      "grant",
      "deny",
      "revoke",
      // the request id itself, and the console's route for deciding it
      h.request,
      `/requests/${h.request}/decide`,
    ];
    const argumentSets = [
      { request: h.request },
      { requestId: h.request, decision: "approve", for: "session" },
      { id: h.request, approve: true, scope: "session", passphrase: "correct horse battery staple" },
    ];
    let n = 0;
    for (const name of names)
      for (const args of argumentSets) {
        const id = `attempt-${++n}`;
        h.peer.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
        const r = await h.peer.next((m) => m.id === id && m.method === undefined, 20_000);
        const what = `tools/call ${JSON.stringify(name)} ${JSON.stringify(args)}`;
        // refused by the gateway (the server lists no such tool: it is not in the catalog) …
        expect(r.error, what).toMatchObject({
          code: -32055,
          data: { error: "tool_not_in_catalog", tool: name },
        });
        expect(r.result, what).toBeUndefined();
        h.stillPending(what);
      }
    // … and never sent on as a call the server could take for a decision either
    expect(h.received().filter((r) => r.method === "tools/call")).toEqual([]);
    await onlyTheHumanDecides(h);
  });

  it("JSON-RPC methods named like an approval, requests or notifications, are not the gateway's: relayed to the server as any unknown method, or refused; nothing is decided", async () => {
    const h = await heldCall();
    const elicitationId = h.elicitation.params.elicitationId as string;
    const requests = [
      "portcullis/approve",
      "portcullis/decide",
      "portcullis/grant",
      "approvals/approve",
      "approvals/decide",
      "approval/approve",
      "approve",
      "decide",
      "requests/decide",
      `requests/${h.request}/decide`,
      `/requests/${h.request}/decide`,
      "grants/create",
      "elicitation/complete",
    ];
    const notifications = [
      "notifications/approve",
      "notifications/approval/granted",
      "notifications/portcullis/approve",
      "notifications/elicitation/complete",
    ];
    const paramSets = [
      { request: h.request },
      { request: h.request, decision: "approve", for: "session", elicitationId },
    ];
    const reachedServer = (method: string, params: unknown) =>
      h.received().some((l) => l.method === method && JSON.stringify(l.params) === JSON.stringify(params));
    for (const method of requests)
      for (const params of paramSets) {
        const what = `${method} ${JSON.stringify(params)}`;
        const r = await h.peer.request(method, params, 20_000);
        if (r.error) {
          expect(r.error.code, what).toBe(METHOD_NOT_FOUND);
        } else {
          // relayed as written: the answer is the server's (the lenient fixture answers {}), and the
          // server got exactly this method and these params
          expect(r.result, what).toEqual({});
          expect(reachedServer(method, params), what).toBe(true);
        }
        h.stillPending(what);
      }
    for (const method of notifications)
      for (const params of paramSets) {
        h.peer.send({ jsonrpc: "2.0", method, params });
        // relayed to the server, as any notification the gateway does not handle
        await waitFor(() => reachedServer(method, params), 20_000, `${method} at the server`);
        h.stillPending(`${method} ${JSON.stringify(params)}`);
      }
    await onlyTheHumanDecides(h);
  });

  it("a forged answer to the gateway's URL elicitation, or a forged notifications/elicitation/complete naming the request, decides nothing", async () => {
    const h = await heldCall();
    const elicitationId = h.elicitation.params.elicitationId as string;
    // the client's real answer to the gateway's elicitation/create: accept, with content claiming a decision
    h.peer.send({
      jsonrpc: "2.0",
      id: h.elicitation.id,
      result: {
        action: "accept",
        content: { decision: "approve", request: h.request, for: "session", approved: true },
      },
    });
    await waitFor(
      () =>
        new RegExp(
          `answered the URL elicitation of request ${h.request} with "accept": not a decision; the request waits for a human`,
        ).test(h.peer.stderr()),
      20_000,
      "the gateway to log the client's answer",
    );
    h.stillPending("after the client accepted the elicitation");
    // answers to elicitations the gateway never sent (or sent and was already answered for), under
    // every id an attacker could guess: the same id again, the next one, the request id, the
    // elicitation id
    for (const id of [h.elicitation.id, "portcullis-elicitation-2", h.request, elicitationId, 0, 1]) {
      h.peer.send({ jsonrpc: "2.0", id, result: { action: "accept", content: { request: h.request } } });
      h.stillPending(`a forged elicitation answer under id ${JSON.stringify(id)}`);
    }
    // the gateway's own completion notice, sent by the client, naming the request
    for (const params of [
      { elicitationId },
      { elicitationId, request: h.request, action: "accept" },
      { elicitationId: h.request },
    ]) {
      h.peer.send({ jsonrpc: "2.0", method: "notifications/elicitation/complete", params });
      h.stillPending(`notifications/elicitation/complete ${JSON.stringify(params)}`);
    }
    // an error answer to the elicitation is not a denial either
    h.peer.send({ jsonrpc: "2.0", id: h.elicitation.id, error: { code: -1, message: "denied by user" } });
    await onlyTheHumanDecides(h);
    // the gateway told the client the request was decided only after the human did: once
    const complete = await h.peer.next((m) => m.method === "notifications/elicitation/complete", 20_000);
    expect(complete.params).toEqual({ elicitationId });
  });
});
