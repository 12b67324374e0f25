// A client's JSON-RPC batch is refused under each of its requests' ids (src/relay/jsonrpc.ts,
// classify). JSON.parse rounds an integer beyond 2^53 (9007199254740993 becomes …992): a single
// request's id is kept byte-exact by a stand-in (src/relay/clientIds.ts), and a batch's ids must be
// too. Answered under the rounded id, the refusal names another request than the one refused: one
// the client may have sent under …992, or have open under …993 (an answer under an open request's
// id would pass for that request's). Real gateway over stdio, the rawlines fixture server (its
// resources/list is never answered: a request the client keeps open), a raw client that reads the
// gateway's lines as written.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

const peers: RawGateway[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) await p.close();
});

const BIG = "9007199254740993"; // JSON.parse: 9007199254740992
const ROUNDED = "9007199254740992";

async function start(): Promise<{ gw: RawGateway; received: () => string[] }> {
  const log = join(newStateDir(), "raw.log");
  const gw = rawGateway({
    args: ["--label", "batchids", "--approval", "none", "--", ...fixtureCommand("rawlines")],
    env: { FIXTURE_RAW_LOG: log, FIXTURE_RAW_ANSWERS: JSON.stringify({ "resources/list": null }) },
  });
  peers.push(gw);
  await gw.initialize({ protocolVersion: "2025-03-26" });
  await gw.request("tools/list");
  const received = () => {
    let text = "";
    try {
      text = readFileSync(log, "utf8");
    } catch {
      return [];
    }
    const out: string[] = [];
    // (the last line may be partly written)
    for (const l of text.split("\n").filter(Boolean)) {
      try {
        out.push(JSON.parse(l) as string);
      } catch {
        // not whole yet
      }
    }
    return out;
  };
  return { gw, received };
}

/** The gateway's lines to the client answering under the id written as `idText`. */
function answersUnder(gw: RawGateway, idText: string): string[] {
  const at = new RegExp(`"id":${idText}[,}]`);
  return gw.lines().filter((l) => at.test(l));
}

function batch(...ids: string[]): string {
  return `[${ids.map((id) => `{"jsonrpc":"2.0","id":${id},"method":"ping"}`).join(",")}]\n`;
}

describe("a batch's ids beyond 2^53", () => {
  it("each request of the batch is refused under its id as written, two that round to one double each once", async () => {
    const { gw } = await start();
    gw.send(batch(BIG, ROUNDED, '"b"', BIG));
    await gw.next((m) => m.id === "b", 20_000);
    // a request after it: everything the gateway wrote for the batch is read by then
    expect((await gw.request("ping")).error).toBeUndefined();
    const big = answersUnder(gw, BIG);
    const rounded = answersUnder(gw, ROUNDED);
    expect(big, gw.lines().join("\n")).toHaveLength(1);
    expect(rounded, gw.lines().join("\n")).toHaveLength(1);
    for (const l of [...big, ...rounded]) expect(l).toContain("does not accept JSON-RPC batches");
  }, 60_000);

  it("an id the client has open (a request beyond 2^53 at the server) gets no refusal of a batch, under it or under its rounded neighbour", async () => {
    const { gw, received } = await start();
    gw.send(`{"jsonrpc":"2.0","id":${BIG},"method":"resources/list","params":{}}\n`);
    await waitFor(
      () => received().some((l) => l.includes('"resources/list"')),
      20_000,
      "the open request at the server",
    );
    gw.send(batch(BIG, '"c"'));
    await gw.next((m) => m.id === "c", 20_000);
    expect((await gw.request("ping")).error).toBeUndefined();
    // the open request is not answered (the server never does), and nothing of the batch went
    // out under its id or under the id JSON.parse rounds it to (another request's)
    expect(answersUnder(gw, BIG), gw.lines().join("\n")).toEqual([]);
    expect(answersUnder(gw, ROUNDED), gw.lines().join("\n")).toEqual([]);
  }, 60_000);
});
