import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { type RawPeer, rawlinesGateway } from "../helpers/raw.js";

// A relayed request (a method the gateway neither guards nor records) reaches the server as the
// client wrote it, with only its id replaced; the server's answer reaches the client as the
// server wrote it, with only the id restored to the client's own text. Anything a parser could
// read two ways is re-serialised instead.

let peers: RawPeer[] = [];
afterEach(async () => {
  for (const p of peers) await p.close();
  peers = [];
});

async function gateway(): Promise<{ peer: RawPeer; received: () => string[] }> {
  const g = await rawlinesGateway();
  peers.push(g.peer);
  return g;
}

/** the client's line as it arrived at the server, found by a marker in it */
async function arrived(received: () => string[], marker: string): Promise<string> {
  await waitFor(() => received().some((l) => l.includes(marker)), 10_000);
  return received().find((l) => l.includes(marker))!;
}

describe("relaying without re-serialisation", () => {
  it("forwards the client's bytes with only the id replaced, and answers with the server's bytes and the client's id", async () => {
    const { peer, received } = await gateway();
    const reply = '{ "result" : {"n": 1.50, "s": "\\u0041"} , "id" :ID,"jsonrpc":"2.0" }';
    const line = `{"jsonrpc": "2.0",  "method":"raw/reply", "params": {"marker": "m1", "n": 1.50, "line": ${JSON.stringify(reply)}}, "id": 9007199254740993}`;
    peer.send(`${line}\n`);
    const got = await arrived(received, "m1");
    const wire = /"id": (\d+)}$/.exec(got)?.[1];
    expect(wire).toBeDefined();
    expect(got).toBe(line.replace("9007199254740993", wire!));
    await waitFor(() => peer.lines().some((l) => l.includes('"n": 1.50')), 10_000);
    const answer = peer.lines().find((l) => l.includes('"n": 1.50'))!;
    expect(answer).toBe(reply.replace("ID", "9007199254740993"));
  });

  it("re-serialises a request whose top-level keys a parser could read two ways", async () => {
    const { peer, received } = await gateway();
    // JSON.parse keeps the last "method"; a first-wins parser would read the other one
    peer.send(
      '{"jsonrpc":"2.0","id":"d1","method":"tools/call","method":"raw/other","params":{"marker":"m2"}}\n',
    );
    const got = await arrived(received, "m2");
    expect(JSON.parse(got)).toMatchObject({ method: "raw/other" });
    expect(got.match(/"method"/g)).toHaveLength(1);
    await peer.next((m) => m.id === "d1");
  });

  it("re-serialises a line with a carriage return between its tokens", async () => {
    const { peer, received } = await gateway();
    peer.send('{"jsonrpc":"2.0",\r"id":"c1","method":"raw/other","params":{"marker":"m3"}}\n');
    const got = await arrived(received, "m3");
    expect(got).not.toContain("\r");
    await peer.next((m) => m.id === "c1");
  });

  it("re-serialises an answer with an escaped top-level id key, under the client's id alone", async () => {
    const { peer } = await gateway();
    // JSON.parse reads the last id (the wire id); a first-wins parser would read 999
    const reply = '{"jsonrpc":"2.0","\\u0069d":999,"id":ID,"result":{"k":"m4"}}';
    peer.send({ jsonrpc: "2.0", id: "e1", method: "raw/reply", params: { line: reply } });
    await peer.next((m) => m.id === "e1");
    const answer = peer.lines().find((l) => l.includes("m4"))!;
    expect(answer).not.toContain("999");
    expect(JSON.parse(answer)).toEqual({ jsonrpc: "2.0", id: "e1", result: { k: "m4" } });
  });
});
