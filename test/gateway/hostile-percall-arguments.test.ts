// A per-call approval is bound to the digest of the held call's effective arguments. The client
// writes the JSON text: it can spell one object many ways (a key written twice, a key written with
// an escape, keys in another order), send a second request under the id of the held one with other
// arguments, leave a field to its default, or send the approved call again. Whatever it writes,
// the server must receive exactly the arguments the human was shown, once. Real gateway, the
// rawlines fixture (which logs every line it receives, byte for byte), decisions by the real CLI.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, pending } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const PAY = {
  name: "pay",
  description: "Pays someone",
  inputSchema: {
    type: "object",
    properties: {
      to: { type: "string" },
      amount: { type: "number", default: 1 },
      memo: { type: "object", properties: { note: { type: "string" } } },
    },
    required: ["to"],
  },
};

async function payGateway(): Promise<{ gw: RawGateway; calls: () => Record<string, unknown>[] }> {
  const log = join(newStateDir(), "raw.log");
  const gw = rawGateway({
    args: [
      "--label",
      "pay",
      "--approval",
      "per-call",
      "--approval-timeout",
      "120000",
      "--",
      NODE,
      FIXTURES.rawlines,
    ],
    env: { FIXTURE_RAW_LOG: log, FIXTURE_RAW_TOOLS: JSON.stringify([PAY]) },
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  const listed = await gw.request("tools/list", {});
  expect((listed.result as { tools: unknown[] }).tools).toHaveLength(1);
  const calls = () => {
    let text = "";
    try {
      text = readFileSync(log, "utf8");
    } catch {
      return [];
    }
    const out: Record<string, unknown>[] = [];
    for (const l of text.split("\n")) {
      if (!l) continue;
      let line: string;
      try {
        line = JSON.parse(l) as string;
      } catch {
        continue; // a line still being written
      }
      if (!line.includes('"tools/call"')) continue;
      out.push({ line, ...(JSON.parse(line) as Record<string, unknown>) });
    }
    return out;
  };
  return { gw, calls };
}

/** The arguments a request's review shows, as an object. */
async function reviewed(stateDir: string, request: string): Promise<Record<string, unknown>> {
  const list = (await pending(stateDir)) as unknown as {
    request: string;
    review: { arguments: { name: string; value: unknown }[] };
  }[];
  const r = list.find((q) => q.request === request)!;
  return Object.fromEntries(r.review.arguments.map((a) => [a.name, a.value]));
}

/** A first-wins reading of JSON text: a parser some servers use (duplicate keys keep the first). */
function firstWins(text: string): unknown {
  const seen = new WeakMap<object, Set<string>>();
  return JSON.parse(text, function (this: object, key: string, value: unknown) {
    if (key === "") return value;
    let keys = seen.get(this);
    if (!keys) {
      keys = new Set();
      seen.set(this, keys);
    }
    if (keys.has(key)) return (this as Record<string, unknown>)[key];
    keys.add(key);
    return value;
  });
}

describe("a per-call approval and the JSON text the client writes", () => {
  it("duplicate and escaped keys: the server gets one spelling, the one reviewed, once", async () => {
    const { gw, calls } = await payGateway();
    // `to` twice (last wins for JSON.parse, first for some parsers), `amount` spelled with an
    // escape after a plain one, a nested duplicate, and a default left out
    gw.send(
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pay","arguments":' +
        '{"to":"alice","amount":5,"to":"mallory","\\u0061mount":5000,"memo":{"note":"a","note":"b"}}}}\n',
    );
    const seen = new Set<string>();
    const req = await nextStoredRequest(gw.stateDir, seen);
    const shown = await reviewed(gw.stateDir, req.request);
    await decideByCli(gw.stateDir, "approve", req.request, "--for", "call");
    const answer = await gw.next((m: WireMessage) => m.id === 7, 30_000);
    expect(answer.error).toBeUndefined();
    const got = calls();
    expect(got).toHaveLength(1);
    const line = got[0]!.line as string;
    const args = (JSON.parse(line) as { params: { arguments: Record<string, unknown> } }).params.arguments;
    // whichever way the server's parser reads duplicates, it reads what the human saw
    expect((firstWins(line) as { params: { arguments: unknown } }).params.arguments).toEqual(args);
    expect(args).toEqual(shown);
    expect(args).toEqual({ to: "mallory", amount: 5000, memo: { note: "b" } });
  }, 90_000);

  it("a second request under the held call's id, with other arguments, neither replaces it nor rides its approval", async () => {
    const { gw, calls } = await payGateway();
    gw.send({
      jsonrpc: "2.0",
      id: 9,
      method: "tools/call",
      params: { name: "pay", arguments: { to: "alice" } },
    });
    const seen = new Set<string>();
    const req = await nextStoredRequest(gw.stateDir, seen);
    expect(await reviewed(gw.stateDir, req.request)).toEqual({ to: "alice", amount: 1 });
    // the same id (also spelled 9.0), other arguments, while the first is held
    gw.send(
      '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"pay","arguments":{"to":"mallory","amount":9999}}}\n',
    );
    gw.send(
      '{"jsonrpc":"2.0","id":9.0,"method":"tools/call","params":{"name":"pay","arguments":{"to":"mallory","amount":9999}}}\n',
    );
    await decideByCli(gw.stateDir, "approve", req.request, "--for", "call");
    await waitFor(() => calls().length >= 1, 30_000, "the approved call at the server");
    // whatever else is answered under id 9, only the approved arguments reached the server
    const got = calls();
    expect(got.map((c) => (c.params as { arguments: unknown }).arguments)).toEqual([
      { to: "alice", amount: 1 },
    ]);
    // the other two asked a human (or were refused): they are no approved call
    const open = (await pending(gw.stateDir)).filter((p) => !seen.has(p.request));
    for (const p of open)
      expect(await reviewed(gw.stateDir, p.request)).toEqual({ to: "mallory", amount: 9999 });
    expect(calls()).toHaveLength(1);
  }, 90_000);

  it("the approved call sent again, same id and same arguments, asks a human again", async () => {
    const { gw, calls } = await payGateway();
    const call = {
      jsonrpc: "2.0",
      id: 11,
      method: "tools/call",
      params: { name: "pay", arguments: { to: "alice", amount: 2 } },
    };
    gw.send(call);
    const seen = new Set<string>();
    const req = await nextStoredRequest(gw.stateDir, seen);
    await decideByCli(gw.stateDir, "approve", req.request, "--for", "call");
    await gw.next((m: WireMessage) => m.id === 11 && m.method === undefined, 30_000);
    // the same again, its keys in another order
    gw.send(
      '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"arguments":{"amount":2,"to":"alice"},"name":"pay"}}\n',
    );
    const again = await nextStoredRequest(gw.stateDir, seen);
    expect(again.request).not.toBe(req.request);
    expect(calls()).toHaveLength(1);
  }, 90_000);
});
