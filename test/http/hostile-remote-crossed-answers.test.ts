// A server reached by URL that answers a request on another request's stream: the answer to one
// call on the SSE stream another call's POST opened, or on the server-to-client GET stream, then a
// second answer to it, answers to ids it was never sent (one of them the gateway's next id), and
// the first call's own stream ended with nothing on it, or left open
// (test/fixtures/servers/http-crossed.mjs, a process of its own). The standard has an answer come
// on its own request's stream; the gateway takes one wherever it comes, by its own wire ids: each
// request it sent is answered once, to the client that asked, with the first answer to its id;
// whatever else answers an id is dropped, said in a few lines (src/supervisor/remoteSession.ts).
// A request answered so is answered: its own stream ending with nothing on it is no lost session
// (before, the epoch ended there, and every other call under way got epoch_transition from a
// server that had lost nothing), and one left open is closed as one left open after its answer is.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { REPO } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { startFixture } from "./upstreamFixture.js";

const CROSSED = join(REPO, "test", "fixtures", "servers", "http-crossed.mjs");

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

type Client = Awaited<ReturnType<typeof startGateway>>["client"];
interface Seen {
  event: string;
  tag?: string;
}

async function setUp(): Promise<{ gw: Session<Client>; records: () => Seen[] }> {
  const dir = tempDir("portcullis-crossed-");
  cleanup.push(() => removeDir(dir));
  const file = join(dir, "record.jsonl");
  const server = await startFixture({ FIXTURE_RECORD: file }, null, 0, CROSSED);
  cleanup.push(() => server.kill());
  const gw = await startGateway({ args: ["--url", server.url, "--approval", "none"] });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return { gw, records: () => readJsonLines<Seen>(file) };
}

// biome-ignore lint/suspicious/noExplicitAny: tool results are read loosely
const textOf = (r: any): string => r.content?.[0]?.text ?? `not a result: ${JSON.stringify(r)}`;

function call(gw: Session<Client>, name: string, args: object): Promise<string> {
  return gw.client.callTool({ name, arguments: args as Record<string, unknown> }).then(textOf);
}

/** A "hold" call, once the server holds it (in an object: an async function's promise would wait for it). */
async function held(
  gw: Session<Client>,
  records: () => Seen[],
  tag: string,
): Promise<{ answer: Promise<string> }> {
  const answer = call(gw, "hold", { tag });
  await waitFor(() => records().some((r) => r.event === "held" && r.tag === tag), 10_000, `hold ${tag}`);
  return { answer };
}

/** Every response the client got answers a request it sent, each exactly once. */
function answeredOnceEach(gw: Session<Client>): void {
  const asked = gw
    .sent()
    .filter((m) => m.method !== undefined && m.id !== undefined)
    .map((m) => JSON.stringify(m.id));
  const answers = gw
    .received()
    .filter((m) => m.method === undefined && m.id !== undefined)
    .map((m) => JSON.stringify(m.id));
  expect(answers.toSorted()).toEqual(asked.toSorted());
  const texts = JSON.stringify(gw.received());
  expect(texts).not.toContain("duplicate");
  expect(texts).not.toContain("stray");
}

/** The warnings about dropped answers: some, and few (they are thinned, not one each). */
function droppedSaidSparingly(gw: Session<Client>): void {
  const lines = gw
    .stderr()
    .split("\n")
    .filter((l) => /unknown id/.test(l));
  expect(lines.length, gw.stderr()).toBeGreaterThan(0);
  expect(lines.length, lines.join("\n")).toBeLessThanOrEqual(2);
}

describe("a remote server that answers a request on another request's stream", () => {
  it("on another call's stream, its own stream then ended empty: each call answered once, the session kept, the strays dropped", async () => {
    const { gw, records } = await setUp();
    const a = await held(gw, records, "a");
    const c = await held(gw, records, "c");
    expect(await call(gw, "cross", { tag: "a", on: "call", strays: true })).toBe("crossed a");
    expect(await a.answer).toBe("answered a elsewhere");
    expect(await call(gw, "finish", { tag: "a", how: "end" })).toBe("finished a");
    // the gateway's next id was answered before it was sent: its request gets its own answer
    expect(await call(gw, "echo", { text: "next" })).toBe("echo next");
    // the call still held is answered by the server as it should be, under the same session
    expect(await call(gw, "cross", { tag: "c", on: "own" })).toBe("crossed c");
    expect(await c.answer).toBe("answered c on its own stream");
    expect(records().filter((r) => r.event === "initialize")).toHaveLength(1);
    expect(gw.stderr()).not.toMatch(/ended without answering/);
    answeredOnceEach(gw);
    droppedSaidSparingly(gw);
  });

  it("on the server-to-client GET stream, then a second answer on its own: the first is the answer, the second dropped", async () => {
    const { gw, records } = await setUp();
    await waitFor(() => records().some((r) => r.event === "get"), 10_000, "the GET stream");
    const a = await held(gw, records, "a");
    expect(await call(gw, "cross", { tag: "a", on: "get" })).toBe("crossed a");
    expect(await a.answer).toBe("answered a elsewhere");
    expect(await call(gw, "finish", { tag: "a", how: "dup" })).toBe("finished a");
    expect(await call(gw, "echo", { text: "after" })).toBe("echo after");
    expect(records().filter((r) => r.event === "initialize")).toHaveLength(1);
    answeredOnceEach(gw);
    droppedSaidSparingly(gw);
  });

  it("its own stream left open after it was answered elsewhere: the gateway closes it, the session kept", async () => {
    const { gw, records } = await setUp();
    const a = await held(gw, records, "a");
    expect(await call(gw, "cross", { tag: "a", on: "call" })).toBe("crossed a");
    expect(await a.answer).toBe("answered a elsewhere");
    await waitFor(
      () => records().some((r) => r.event === "held-closed" && r.tag === "a"),
      10_000,
      "a closed",
    );
    expect(await call(gw, "echo", { text: "after" })).toBe("echo after");
    expect(records().filter((r) => r.event === "initialize")).toHaveLength(1);
    answeredOnceEach(gw);
  });

  it("the 2026-07-28 era: server/discover answered on a held call's stream with another serverInfo ends the epoch, as on its own stream", async () => {
    const dir = tempDir("portcullis-crossed-");
    cleanup.push(() => removeDir(dir));
    const file = join(dir, "record.jsonl");
    const records = () => readJsonLines<Seen>(file);
    const server = await startFixture({ FIXTURE_RECORD: file }, null, 0, CROSSED);
    cleanup.push(() => server.kill());
    const peer = rawGateway({ args: ["--label", "crossed", "--url", server.url, "--approval", "none"] });
    cleanup.push(() => peer.close());
    const envelope = {
      _meta: modernMeta({}, { name: "raw", version: "1" }),
    };
    expect((await peer.request("server/discover", envelope)).error).toBeUndefined();
    expect((await peer.request("tools/list", envelope, 20_000)).error).toBeUndefined();
    const epochOf = async () =>
      (
        JSON.parse((await runCli(["status", "--json", "--state-dir", peer.stateDir])).stdout).gateways as {
          epoch: string;
        }[]
      )[0]!.epoch;
    const before = await epochOf();
    const heldCall = peer.request("tools/call", {
      name: "hold",
      arguments: { tag: "discover" },
      ...envelope,
    });
    await waitFor(
      () => records().some((r) => r.event === "held" && r.tag === "discover"),
      10_000,
      "the held call",
    );
    const again = await peer.request("server/discover", envelope, 20_000);
    // never passed on as the server's word: the epoch it would describe is over
    expect(JSON.stringify(again)).not.toContain("6.6.6");
    expect(again.error?.data).toMatchObject({ error: "epoch_transition" });
    expect((await heldCall).error?.data).toMatchObject({ error: "epoch_transition" });
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => peer.stderr().includes("describes itself differently"),
      20_000,
      "the gateway's line on the changed description",
    );
    expect(peer.stderr()).toContain("describes itself differently");
    await waitFor(async () => (await epochOf()) !== before, 20_000, "a new epoch");
  });
});
