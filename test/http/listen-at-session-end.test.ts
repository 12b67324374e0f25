// A 2026-07-28 client's subscriptions/listen still open when its `run --listen` session ends gets
// what a stdio client's gets at the gateway's shutdown (test/gateway/listen-at-shutdown.test.ts):
// a listen at the server is ended as a server ends its listens at its own shutdown (a result,
// `resultType` "complete", `_meta` naming the subscription), one that names resources closed in
// the audit (`call_interrupted`, `epoch_transition`, method `subscriptions/listen`) before the
// run's end; a listen naming resources still held for the server's catalog is refused
// identity_pending, one `authorization_denied` per uri, before the run's end. The audit's chain is
// verified by `portcullis audit verify`, and the run's `run_ended` is its last record.
//
// A modern session has no id on the wire, so no DELETE names it, and a listen whose connection is
// still there keeps it from the idle timeout (a modern client's closed stream is its cancellation):
// its ends are the front's SIGTERM (here) and the gateway's own end, which takes the same path
// (HttpSession.end). Real `run --listen` (dist) on 127.0.0.1, the rawlines fixture (listens left
// unanswered), plain fetch.
//
// What failed before: each listen was answered session_ended, as a request the session failed to
// answer (its records were right already: the listen naming a resource was closed epoch_transition
// as its server stopped).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { completeLines } from "../helpers/completeLines.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";
import { modernEnvelope } from "./pipeline.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SUB = "io.modelcontextprotocol/subscriptionId";
const META = modernEnvelope("listen-at-session-end");
const DOC = "raw://doc";

interface Message {
  id?: unknown;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: { code: number; message: string; data?: Record<string, unknown> };
}

/** A POST of a modern request; its messages (a JSON body or an SSE stream) as they come. */
function post(l: Listener, id: string, method: string, params: Record<string, unknown> = {}) {
  const messages: Message[] = [];
  const done = (async () => {
    const res = await fetch(l.url, {
      method: "POST",
      headers: l.headers(),
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: META } }),
    });
    if (!res.headers.get("content-type")?.includes("text/event-stream")) {
      const text = await res.text();
      if (text) messages.push(JSON.parse(text) as Message);
      return;
    }
    let buffer = "";
    for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        const line = buffer.slice(0, nl).replace(/\r$/, "");
        buffer = buffer.slice(nl + 1);
        if (line.startsWith("data:") && line.slice(5).trim() !== "")
          messages.push(JSON.parse(line.slice(5)) as Message);
      }
    }
  })().catch(() => {
    // the front went away: what came is in `messages`
  });
  /** The one answer to the request, once its exchange ended. */
  const answer = async (): Promise<Message> => {
    await done;
    const found = messages.filter((m) => m.id === id && m.method === undefined);
    expect(found, JSON.stringify(messages)).toHaveLength(1);
    return found[0]!;
  };
  return { answer };
}

/**
 * A front in front of the rawlines fixture (listens never answered), its one modern session
 * listed, and a listen that names no resource and one that names DOC, both at the server.
 */
async function modernSessionWithListens() {
  const dir = tempDir("pc-http-listen-end-");
  cleanup.push(() => removeDir(dir));
  const log = join(dir, "raw.log");
  const l = await startListener([NODE, FIXTURES.rawlines], {
    args: ["--approval", "none", "--hold-timeout", "120000"],
    env: {
      FIXTURE_RAW_LOG: log,
      FIXTURE_RAW_ANSWERS: JSON.stringify({ "subscriptions/listen": null }),
    },
  });
  cleanup.push(() => l.close());
  const received = (): Message[] =>
    existsSync(log)
      ? completeLines(readFileSync(log, "utf8"))
          .filter(Boolean)
          .map((line) => JSON.parse(JSON.parse(line) as string) as Message)
      : [];
  expect((await post(l, "list", "tools/list").answer()).error).toBeUndefined();
  const tools = post(l, "tools", "subscriptions/listen", { notifications: { toolsListChanged: true } });
  const doc = post(l, "doc", "subscriptions/listen", { notifications: { resourceSubscriptions: [DOC] } });
  // both at the server (the gateway's own listen asks for neither)
  await waitFor(
    () => {
      const listens = received().filter((m) => m.method === "subscriptions/listen");
      const names = (m: Message) => m.params?.notifications as Record<string, unknown> | undefined;
      return (
        (listens.some((m) => names(m)?.toolsListChanged === true && !names(m)?.resourceSubscriptions) &&
          listens.some((m) => JSON.stringify(names(m)?.resourceSubscriptions) === JSON.stringify([DOC]))) ||
        undefined
      );
    },
    20_000,
    "the client's listens at the server",
  );
  return { l, tools, doc };
}

/**
 * A front whose server never answers the gateway's tools/list, and a modern client's listen naming
 * DOC held for that catalog (read by the gateway: its debug line).
 */
async function listenHeldForCatalog() {
  const dir = tempDir("pc-http-listen-held-");
  cleanup.push(() => removeDir(dir));
  const l = await startListener([NODE, FIXTURES.rawlines], {
    args: ["--approval", "none", "--hold-timeout", "120000"],
    env: {
      FIXTURE_RAW_ANSWERS: JSON.stringify({ "subscriptions/listen": null, "tools/list": null }),
      PORTCULLIS_DEBUG: "1",
    },
  });
  cleanup.push(() => l.close());
  const doc = post(l, "doc", "subscriptions/listen", { notifications: { resourceSubscriptions: [DOC] } });
  await waitFor(() => /← client .*subscriptions\/listen/.test(l.stderr()), 20_000, "the listen, read");
  return { l, doc };
}

/** The end a listen gets at its server's shutdown, as on stdio. */
const endedAtShutdown = (id: string) => ({
  jsonrpc: "2.0",
  id,
  result: { resultType: "complete", _meta: { [SUB]: id } },
});

/**
 * Once the front exited: the chain verified, the listen naming DOC forwarded and closed
 * `epoch_transition` (method subscriptions/listen), and the run's end its last record.
 */
async function expectListenClosedBeforeRunEnd(l: Listener): Promise<void> {
  await l.exited;
  const events = await verifiedAuditEvents(l.stateDir);
  const run = events.find((e) => e.type === "run_started")?.run;
  expect(run).toEqual(expect.any(String));
  const ofRun = events.filter((e) => e.run === run);
  const doc = ofRun
    .filter((e) => e.requestId === "doc")
    .map((e) => [e.type, e.method, e.reason ?? null, e.outcome ?? null]);
  expect(doc).toEqual([
    ["request_forwarded", "subscriptions/listen", null, null],
    ["call_interrupted", "subscriptions/listen", "epoch_transition", "unknown"],
  ]);
  expect(ofRun.at(-1)?.type).toBe("run_ended");
  expect(ofRun.filter((e) => e.type === "run_ended")).toHaveLength(1);
}

describe("a modern client's subscriptions/listen open when its HTTP session ends", () => {
  it("the front's SIGTERM: each listen gets the end of a server's shutdown, the one naming a resource closed in the audit before run_ended", async () => {
    const { l, tools, doc } = await modernSessionWithListens();
    l.proc.kill("SIGTERM");
    expect(await tools.answer()).toEqual(endedAtShutdown("tools"));
    expect(await doc.answer()).toEqual(endedAtShutdown("doc"));
    await expectListenClosedBeforeRunEnd(l);
  }, 60_000);

  it("the front's SIGTERM: a listen held for the catalog is refused identity_pending, its uri recorded once before run_ended", async () => {
    const { l, doc } = await listenHeldForCatalog();
    l.proc.kill("SIGTERM");
    const answer = await doc.answer();
    expect(answer.error?.code, JSON.stringify(answer)).toBe(-32053);
    expect(answer.error?.data).toMatchObject({ error: "identity_pending" });
    await l.exited;
    const events = await verifiedAuditEvents(l.stateDir);
    const run = events.find((e) => e.type === "run_started")?.run;
    const ofRun = events.filter((e) => e.run === run);
    expect(
      ofRun.filter((e) => e.requestId === "doc").map((e) => [e.type, e.tool ?? null, e.reason ?? null]),
    ).toEqual([["authorization_denied", `resources/subscribe ${DOC}`, "identity_pending"]]);
    expect(ofRun.at(-1)?.type).toBe("run_ended");
  }, 60_000);
});
