import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { type RawPeer, rawlinesGateway } from "../helpers/raw.js";
import { idTextOf, SERVER_IDS, serverRequestLine } from "./serverIds.js";

// The server's own requests to the client (sampling, elicitation, roots, ping) go to the client
// under the gateway's ids; the client's answers, a cancellation by the server, and the gateway's
// own error for a request over the size limit go back to the server under the id exactly as the
// server wrote it. Over stdio, with a server that writes lines no serializer would.

let peers: RawPeer[] = [];
afterEach(async () => {
  for (const p of peers) await p.close();
  peers = [];
});

async function gateway(extra: string[] = []): Promise<{ peer: RawPeer; received: () => string[] }> {
  const g = await rawlinesGateway(extra);
  peers.push(g.peer);
  return g;
}

/** The answers the server received (lines without a method), by the marker in their result or error. */
function answersByMarker(received: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of received) {
    const m = JSON.parse(line) as {
      method?: string;
      result?: { marker?: string };
      error?: { data?: string };
    };
    if (m.method !== undefined) continue;
    const marker = m.result?.marker ?? m.error?.data;
    if (typeof marker === "string") out.set(marker, line);
  }
  return out;
}

describe("the server's requests to the client keep the server's id text", () => {
  it("answers go back under each id exactly as the server wrote it", async () => {
    const { peer, received } = await gateway();
    const lines = SERVER_IDS.map((id, i) => serverRequestLine(id, i));
    peer.send({ jsonrpc: "2.0", id: "send", method: "raw/send", params: { lines } });
    const wires = new Set<unknown>();
    for (let i = 0; i < SERVER_IDS.length; i++) {
      const req = await peer.next((m) => m.params?.marker === `k${i}` && m.method !== undefined);
      expect(typeof req.id).toBe("number"); // the gateway's own id toward the client
      wires.add(req.id);
      // one answer as a result, the next as an error: both carry the marker back
      peer.send(
        i % 2 === 0
          ? { jsonrpc: "2.0", id: req.id, result: { marker: `k${i}` } }
          : { jsonrpc: "2.0", id: req.id, error: { code: -1, message: "no", data: `k${i}` } },
      );
    }
    expect(wires.size).toBe(SERVER_IDS.length);
    await waitFor(() => answersByMarker(received()).size === SERVER_IDS.length, 10_000, "every answer");
    const answers = answersByMarker(received());
    SERVER_IDS.forEach((id, i) => {
      expect(idTextOf(answers.get(`k${i}`)!), `answer k${i}`).toBe(id);
    });
  });

  it("a cancellation by the server names its request by the id's text", async () => {
    const { peer, received } = await gateway();
    // pairs JSON.parse reads as one id; the first of each pair is cancelled by its own text
    const pairs = [
      ["9007199254740993", "9007199254740992"],
      ["1e2", "100"],
      ["-0", "0"],
    ];
    const lines: string[] = [];
    pairs.forEach(([a, b], p) => {
      lines.push(serverRequestLine(a!, 2 * p), serverRequestLine(b!, 2 * p + 1));
    });
    for (const [a] of pairs)
      lines.push(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${a}}}`);
    peer.send({ jsonrpc: "2.0", id: "send", method: "raw/send", params: { lines } });
    for (let p = 0; p < pairs.length; p++) {
      const first = await peer.next((m) => m.params?.marker === `k${2 * p}`);
      const second = await peer.next((m) => m.params?.marker === `k${2 * p + 1}`);
      const cancelled = await peer.next((m) => m.method === "notifications/cancelled");
      expect(cancelled.params.requestId, `cancellation of ${pairs[p]![0]}`).toBe(first.id);
      // the other request is still open, and its answer reaches the server under its own text
      peer.send({ jsonrpc: "2.0", id: second.id, result: { marker: `k${2 * p + 1}` } });
    }
    await waitFor(() => answersByMarker(received()).size === pairs.length, 10_000, "the answers");
    const answers = answersByMarker(received());
    pairs.forEach(([, b], p) => {
      expect(idTextOf(answers.get(`k${2 * p + 1}`)!)).toBe(b);
    });
  });

  it("a second request under an id the server's request still at the client carries is refused to the server", async () => {
    const { peer, received } = await gateway();
    const lines = [serverRequestLine("5", 2), serverRequestLine("5", 6)];
    const sent = await peer.request("raw/send", { lines });
    expect(sent.error).toBeUndefined();
    // the first reaches the client; the second is answered -32600 to the server, never relayed
    const first = await peer.next((m) => m.method !== undefined && m.params?.marker === "k2");
    const refused = () =>
      received().filter((l) => (JSON.parse(l) as { error?: { code?: number } }).error?.code === -32600);
    await waitFor(() => refused().length === 1 || undefined, 10_000, "the refusal");
    expect(idTextOf(refused()[0]!)).toBe("5");
    expect(peer.messages().filter((m) => m.method !== undefined && m.params?.marker === "k6")).toEqual([]);
    // the client's answer goes to the first, under its id
    peer.send({ jsonrpc: "2.0", id: first.id, result: { marker: "k2" } });
    await waitFor(() => answersByMarker(received()).has("k2") || undefined, 10_000, "the answer");
    expect(idTextOf(answersByMarker(received()).get("k2")!)).toBe("5");
    expect(peer.stderr()).toMatch(/refused a roots\/list request of the server: its id 5 is already in use/);
  });

  it("a request over the size limit is refused to the server under its own id text", async () => {
    const { peer, received } = await gateway(["--max-message-bytes", "100000"]);
    const lines = ["9007199254740993", "1e2", '"\\u0041"'].map(
      (id) => `{"jsonrpc":"2.0","id":${id},"method":"sampling/createMessage","params":{"pad":"PAD"}}`,
    );
    peer.send({ jsonrpc: "2.0", id: "send", method: "raw/send", params: { lines, pad: 150_000 } });
    const refusals = () =>
      received().filter((l) => (JSON.parse(l) as { error?: unknown }).error !== undefined);
    await waitFor(() => refusals().length === 3, 10_000, "three refusals");
    expect(refusals().map(idTextOf)).toEqual(["9007199254740993", "1e2", '"\\u0041"']);
  });

  it("a client's answer reaches only the process that asked, even when a new one uses the same id", async () => {
    const { peer, received } = await gateway();
    // the first process asks, then dies before the client answers
    peer.send({
      jsonrpc: "2.0",
      id: "die",
      method: "raw/send",
      params: { lines: [serverRequestLine("5", 0)], exit: true },
    });
    const old = await peer.next((m) => m.method !== undefined && m.params?.marker === "k0");
    const cancelled = await peer.next((m) => m.method === "notifications/cancelled");
    expect(cancelled.params.requestId).toBe(old.id);
    await peer.next((m) => m.id === "die"); // its call ended with the process
    // the next process (started by the supervisor) asks under the same id: the client sees another id
    await waitFor(async () => (await peer.request("ping")).error === undefined, 20_000, "a new process");
    const again = await peer.request("raw/send", { lines: [serverRequestLine("5", 1)] }, 20_000);
    expect(again.error, JSON.stringify(again.error)).toBeUndefined();
    const fresh = await peer.next((m) => m.method !== undefined && m.params?.marker === "k1");
    expect(fresh.id).not.toBe(old.id);
    // the late answer to the dead process's request goes nowhere; the new one's reaches it
    peer.send({ jsonrpc: "2.0", id: old.id, result: { marker: "k0" } });
    peer.send({ jsonrpc: "2.0", id: fresh.id, result: { marker: "k1" } });
    await waitFor(() => answersByMarker(received()).has("k1"), 10_000, "the new process's answer");
    expect(idTextOf(answersByMarker(received()).get("k1")!)).toBe("5");
    expect(answersByMarker(received()).has("k0")).toBe(false);
  });
});
