// JSON-RPC batches on stdio. Revision 2025-03-26 let a client send a batch (a JSON array of
// requests and notifications); 2025-06-18 removed them. portcullis takes none in any era (each
// message is one decision and one record: docs/protocol-eras.md), but a refusal must still reach
// each request it refuses: JSON-RPC 2.0 answers a batch's requests one by one, by their ids, and a
// client matches answers by id. A lone error under id null answers none of them, and a client of
// the 2025-03-26 era that batched waited for each until its own timeout (the SDK's: 60 s).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { completeLines } from "../helpers/completeLines.js";
import { tempDir } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

const REFUSED =
  "Invalid JSON-RPC message: portcullis does not accept JSON-RPC batches (arrays); send one message per line.";

describe("a JSON-RPC batch from the client (2025-03-26 era)", () => {
  it("each request in it is refused under its own id, and nothing of it reaches the server", async () => {
    const methodLog = join(tempDir("portcullis-batch-"), "methods.log");
    const gw = rawGateway({
      args: ["--label", "lenient", "--approval", "none", "--", NODE, FIXTURES.lenient],
      env: { FIXTURE_METHOD_LOG: methodLog },
    });
    try {
      await gw.initialize({ protocolVersion: "2025-03-26" });
      await gw.request("tools/list");
      gw.send(
        `${JSON.stringify([
          { jsonrpc: "2.0", id: "b1", method: "ping" },
          { jsonrpc: "2.0", method: "notifications/roots/list_changed" },
          {
            jsonrpc: "2.0",
            id: 42,
            method: "tools/call",
            params: { name: "echo", arguments: { message: "in a batch" } },
          },
        ])}\n`,
      );
      const first = await gw.next((m) => m.id === "b1");
      const second = await gw.next((m) => m.id === 42);
      for (const answer of [first, second]) {
        expect(answer.result).toBeUndefined();
        expect(answer.error).toEqual({ code: -32600, message: REFUSED });
      }
      // a request after it, answered by the server: the batch's parts never went there
      await gw.request("ping");
      const methods = completeLines(readFileSync(methodLog, "utf8")).map(
        (l) => (JSON.parse(l) as { method: string }).method,
      );
      expect(methods.filter((m) => m === "tools/call" || m === "notifications/roots/list_changed")).toEqual(
        [],
      );
      expect(methods.filter((m) => m === "ping")).toHaveLength(1);
      // no answer under id null: each request had its own
      expect(gw.messages().filter((m) => m.id === null)).toEqual([]);
    } finally {
      await gw.close();
    }
  });

  it("a batch with no request in it (notifications only, or empty) gets the one error under id null", async () => {
    const gw = rawGateway({
      args: ["--label", "lenient", "--approval", "none", "--", NODE, FIXTURES.lenient],
    });
    try {
      await gw.initialize({ protocolVersion: "2025-03-26" });
      gw.send('[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]\n');
      gw.send("[]\n");
      await gw.request("ping");
      const nulls = gw.messages().filter((m) => m.id === null);
      expect(nulls).toHaveLength(2);
      for (const m of nulls) expect(m.error).toEqual({ code: -32600, message: REFUSED });
    } finally {
      await gw.close();
    }
  });
});
