// Resumption on `run --listen` hands a client what a stream sent while its connection was down, a
// call's answer included. Event ids are `<stream>.<seq>` counted per session ("1.1" is every
// session's first call), so an id says nothing of whose it is: what keeps another client from
// taking an answer by resuming is that the stream is looked for in the session the request names,
// and that a legacy session answers only the process that opened it (`sessionOf` and
// `HttpSession.resume`, src/transport/http.ts and httpSession.ts). Attacked here: another process
// with the token, the session id and the event id (GET, and DELETE to end it); another session of
// the same process naming the first one's event id. Neither gets the answer; its owner still does.
import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { NODE } from "../helpers/paths.js";
import { firstEventThenDrop, sessionAwaitingApproval } from "../helpers/resumption.js";
import type { Listener } from "./listen.js";
import { messagesOf, openSession, raw } from "./raw.js";

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SECRET_ANSWER = "meant for the session that asked";

/** One request from another process (its own socket, its own pid): status and body. */
function fromAnotherProcess(
  l: Listener,
  method: string,
  headers: Record<string, string>,
): { status: number; body: string } {
  const r = spawnSync(
    NODE,
    [
      "-e",
      `fetch(${JSON.stringify(l.url)}, { method: ${JSON.stringify(method)}, headers: ${JSON.stringify(headers)} })
        .then(async (r) => process.stdout.write(JSON.stringify({ status: r.status, body: await r.text() })))`,
    ],
    { encoding: "utf8", timeout: 15_000 },
  );
  return JSON.parse(r.stdout) as { status: number; body: string };
}

describe("resuming another client's stream", () => {
  it("another process with the session id and the event id gets 404 on GET and DELETE; another session of the same client gets 404; the owner resumes the answer", async () => {
    const { l, session } = await sessionAwaitingApproval(cleanup);
    const { id: eventId } = await firstEventThenDrop(
      l,
      session,
      JSON.stringify({
        jsonrpc: "2.0",
        id: "call-1",
        method: "tools/call",
        params: { name: "echo", arguments: { message: SECRET_ANSWER }, _meta: { progressToken: "p1" } },
      }),
    );
    expect(eventId).toBe("1.1"); // predictable: any client can name it
    const pending = await nextStoredRequest(l.stateDir);
    await decideByCli(l.stateDir, "approve", pending.request, "--for", "call");
    // the answer is now kept for resumption in the session's stream 1

    const theirs = l.headers({ "mcp-session-id": session, "last-event-id": eventId });
    const stolen = fromAnotherProcess(l, "GET", theirs);
    expect(stolen.status, stolen.body).toBe(404);
    expect(stolen.body).not.toContain(SECRET_ANSWER);
    const ended = fromAnotherProcess(l, "DELETE", l.headers({ "mcp-session-id": session }));
    expect(ended.status, ended.body).toBe(404);

    // another session of this same process: the id names no stream of it
    const other = await openSession(l);
    const crossed = await raw(l, {
      method: "GET",
      headers: l.headers({ "mcp-session-id": other, "last-event-id": eventId }),
    });
    expect(crossed.status, crossed.body).toBe(404);
    expect(crossed.body).not.toContain(SECRET_ANSWER);

    // the owner resumes and gets its answer: it was there to be taken
    const own = await raw(l, { method: "GET", headers: theirs });
    expect(own.status).toBe(200);
    expect(JSON.stringify(messagesOf(own.body).find((m) => m.id === "call-1")?.result)).toContain(
      SECRET_ANSWER,
    );
  });
});
