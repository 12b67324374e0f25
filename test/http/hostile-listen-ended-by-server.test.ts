// The HTTP side of test/gateway/hostile-listen-ended-by-server.test.ts: a 2026-07-28 client's
// subscriptions/listen over `run --listen`, ended by the server's answer (which reaches the client
// as the answer to the listen's POST). The gateway behind the front must take it as over: at a
// catalog change none of its own notifications/tools/list_changed may go out for it. Over HTTP the
// front routes a notification by the subscription it names (the front's own number for the
// listen's exchange); one naming an exchange that has ended goes to the oldest open request's
// stream instead, so a list_changed for the ended listen would reach the client on another
// request's stream, under a subscription id the client never used. A new listen under the same
// client id is told of each change once, on its own stream. Real gateway, plain fetch, the rawlines
// fixture (listens and `x/hang` left unanswered; its tool list a file).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
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
const META = modernEnvelope("listen-ended-by-server-http");
const LISTEN_ID = "listen:0";
const CHANGED = "tool catalog changed: revision";

type Message = {
  id?: unknown;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: unknown;
};

function tool(name: string): object {
  return {
    name,
    description: `The tool ${name}.`,
    inputSchema: { type: "object", properties: {} },
    annotations: { readOnlyHint: true },
  };
}

/** A POST of `body`; its messages, whether the answer is a JSON body or an SSE stream, as they come. */
function post(l: Listener, body: object): { messages: Message[]; done: Promise<void>; abort(): void } {
  const messages: Message[] = [];
  const ctl = new AbortController();
  const done = (async () => {
    const res = await fetch(l.url, {
      method: "POST",
      headers: l.headers(),
      body: JSON.stringify(body),
      signal: ctl.signal,
    });
    const sse = res.headers.get("content-type")?.includes("text/event-stream");
    if (!sse) {
      const text = await res.text();
      if (text) messages.push(JSON.parse(text) as Message);
      return;
    }
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        const line = buffer.slice(0, nl).replace(/\r$/, "");
        buffer = buffer.slice(nl + 1);
        if (!line.startsWith("data:") || line.slice(5).trim() === "") continue;
        messages.push(JSON.parse(line.slice(5)) as Message);
      }
    }
  })().catch((e: unknown) => {
    if ((e as Error).name !== "AbortError") throw e;
  });
  return { messages, done, abort: () => ctl.abort() };
}

function request(id: unknown, method: string, params: Record<string, unknown> = {}): object {
  return { jsonrpc: "2.0", id, method, params: { ...params, _meta: META } };
}

async function call(
  l: Listener,
  id: unknown,
  method: string,
  params: Record<string, unknown> = {},
): Promise<Message> {
  const p = post(l, request(id, method, params));
  await p.done;
  const answer = p.messages.find((m) => m.id === id && m.method === undefined);
  if (!answer) throw new Error(`no answer to ${method}: ${JSON.stringify(p.messages)}`);
  return answer;
}

function count(text: string, part: string): number {
  return text.split(part).length - 1;
}

describe("a subscriptions/listen the server ends by answering it (run --listen)", () => {
  it("is over for the gateway: no list_changed for it on any stream at a catalog change; a new listen under its id gets one", async () => {
    const dir = tempDir("portcullis-listen-ended-http-");
    cleanup.push(() => removeDir(dir));
    const tools = join(dir, "tools.json");
    const log = join(dir, "raw.log");
    writeFileSync(tools, JSON.stringify([tool("one")]));
    const l = await startListener([NODE, FIXTURES.rawlines], {
      args: ["--approval", "none"],
      env: {
        FIXTURE_RAW_LOG: log,
        FIXTURE_RAW_TOOLS_FILE: tools,
        FIXTURE_RAW_ANSWERS: JSON.stringify({ "subscriptions/listen": null, "x/hang": null }),
      },
    });
    cleanup.push(() => l.close());
    const received = (): Message[] => {
      const out: Message[] = [];
      for (const line of completeLines(readFileSync(log, "utf8")).filter(Boolean)) {
        try {
          out.push(JSON.parse(JSON.parse(line) as string) as Message);
        } catch {
          // (the last line, partly written)
        }
      }
      return out;
    };
    // the client's listens at the server (the gateway's own asks for no prompts)
    const listens = () =>
      received().filter(
        (m) =>
          m.method === "subscriptions/listen" &&
          (m.params?.notifications as Record<string, unknown> | undefined)?.promptsListChanged === true,
      );
    const listen = () =>
      post(
        l,
        request(LISTEN_ID, "subscriptions/listen", {
          notifications: { toolsListChanged: true, promptsListChanged: true },
        }),
      );
    const marks: string[] = [];
    /** the server's list changes, and it says so; then it logs `mark`, which goes to the oldest open request */
    const catalogChanges = async (names: string[], mark: string) => {
      const before = count(l.stderr(), CHANGED);
      writeFileSync(tools, JSON.stringify(names.map(tool)));
      const sent = await call(l, `change-${mark}`, "raw/send", {
        lines: ['{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'],
      });
      expect(sent.error, JSON.stringify(sent)).toBeUndefined();
      await waitFor(
        () => count(l.stderr(), CHANGED) > before || undefined,
        20_000,
        "the catalog change taken",
      );
      const logged = await call(l, `mark-${mark}`, "raw/send", {
        lines: [
          JSON.stringify({
            jsonrpc: "2.0",
            method: "notifications/message",
            params: { level: "info", data: mark },
          }),
        ],
      });
      expect(logged.error, JSON.stringify(logged)).toBeUndefined();
      marks.push(mark);
    };

    expect((await call(l, "list-0", "tools/list")).error).toBeUndefined();
    // a request the server never answers: its stream is where a notification naming no open
    // exchange goes (the oldest open request)
    const hang = post(l, request("hang", "x/hang"));
    cleanup.push(() => hang.abort());
    await waitFor(() => received().some((m) => m.method === "x/hang"), 20_000, "x/hang at the server");

    const first = listen();
    const wire = (await waitFor(() => listens()[0], 20_000, "the listen at the server")).id;
    // the server ends it: the answer is the listen POST's
    expect(
      (
        await call(l, "end", "raw/send", {
          lines: [
            JSON.stringify({
              jsonrpc: "2.0",
              id: wire,
              result: { resultType: "complete", _meta: { [SUB]: wire } },
            }),
          ],
        })
      ).error,
    ).toBeUndefined();
    await first.done;
    const ended = first.messages.find((m) => m.id === LISTEN_ID && m.method === undefined);
    expect(ended, JSON.stringify(first.messages)).toBeDefined();
    expect((ended!.result as { _meta?: Record<string, unknown> })._meta?.[SUB]).toBe(LISTEN_ID);

    // the catalog changes: the hang request's stream gets the server's log message, and nothing
    // of the ended listen before it
    await catalogChanges(["one", "two"], "after-end");
    await waitFor(
      () => hang.messages.some((m) => m.method === "notifications/message") || undefined,
      20_000,
      "the server's log message on the hang request's stream",
    );
    expect(
      hang.messages.filter((m) => m.method === "notifications/tools/list_changed"),
      JSON.stringify(hang.messages),
    ).toEqual([]);

    // the client listens again under the same id: one list_changed for it, on its own stream
    const second = listen();
    cleanup.push(() => second.abort());
    await waitFor(() => listens()[1], 20_000, "the second listen at the server");
    await catalogChanges(["one", "two", "three"], "after-second");
    await waitFor(
      () => hang.messages.filter((m) => m.method === "notifications/message").length >= 2 || undefined,
      20_000,
      "the second log message",
    );
    await waitFor(
      () => second.messages.some((m) => m.method === "notifications/tools/list_changed") || undefined,
      20_000,
      "the second listen's list_changed",
    );
    expect(second.messages.filter((m) => m.method === "notifications/tools/list_changed")).toEqual([
      { jsonrpc: "2.0", method: "notifications/tools/list_changed", params: { _meta: { [SUB]: LISTEN_ID } } },
    ]);
    expect(
      hang.messages.filter((m) => m.method === "notifications/tools/list_changed"),
      JSON.stringify(hang.messages),
    ).toEqual([]);
  }, 120_000);
});
