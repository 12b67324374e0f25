// Which process answers. A request is written to one server process, a subscription lives on one:
// what another process says under that id, whether as an answer or as a notification of that
// subscription, is not theirs, and never reaches the client as if it were. The hostile fixture
// (impostor.mjs) notes every id it keeps open, and the process that replaces it speaks under
// those ids before it answers its replayed handshake. Real gateway, raw client, both eras.
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readJsonLines, removeDir, waitFor } from "../helpers/files.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The modern era's envelope, on every request of a 2026-07-28 client. */
const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};
const SUB = "io.modelcontextprotocol/subscriptionId";

interface Owed {
  pid: number;
  id?: unknown;
  method?: string;
  spoke?: unknown;
}

describe("replies and subscription notifications are tied to the process they belong to", () => {
  for (const era of ["legacy", "modern"] as const) {
    it(`${era} era: the next process answers the ids the dead one owed and speaks under its subscription: the client gets none of it`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "pc-process-ties-"));
      const owedFile = join(dir, "owed.jsonl");
      const gw = rawGateway({
        args: ["--label", "impostor", "--approval", "none", "--", ...fixtureCommand("impostor")],
        env: { FIXTURE_OWED: owedFile, PORTCULLIS_RESPAWN_BACKOFF_MS: "20" },
      });
      cleanup.push(
        () => gw.close(),
        () => removeDir(dir),
      );
      const owed = () => (existsSync(owedFile) ? readJsonLines<Owed>(owedFile) : []);
      const params = (p: Record<string, unknown> = {}) => (era === "modern" ? { ...p, _meta: META } : p);
      if (era === "legacy") await gw.initialize({}, 20_000);
      else expect((await gw.request("server/discover", { _meta: META }, 20_000)).result).toBeDefined();
      expect((await gw.request("tools/list", params(), 20_000)).result).toBeDefined();

      // a call and a read the server keeps open, and (modern) a subscription of the client's
      gw.send({
        jsonrpc: "2.0",
        id: "call",
        method: "tools/call",
        params: params({ name: "echo", arguments: { message: "hang" } }),
      });
      gw.send({ jsonrpc: "2.0", id: "read", method: "resources/read", params: params({ uri: "hang:r" }) });
      if (era === "modern") {
        gw.send({
          jsonrpc: "2.0",
          id: "listen:0",
          method: "subscriptions/listen",
          params: { notifications: { resourcesListChanged: true }, _meta: META },
        });
        await gw.next(
          (m) =>
            m.method === "notifications/subscriptions/acknowledged" &&
            (m.params as { _meta?: Record<string, unknown> })?._meta?.[SUB] === "listen:0",
          20_000,
        );
      }
      const first = await waitFor(
        () => {
          const open = owed().filter((o) => o.id !== undefined);
          const want = [
            "tools/call",
            "resources/read",
            ...(era === "modern" ? ["subscriptions/listen"] : []),
          ];
          return want.every((m) => open.some((o) => o.method === m)) ? open[0]!.pid : undefined;
        },
        20_000,
        "the requests at the first process",
      );

      // the first process dies owing them; the next one speaks under their ids before it answers
      // its replayed handshake
      process.kill(first, "SIGKILL");
      const call = await gw.next((m) => m.id === "call", 20_000);
      const read = await gw.next((m) => m.id === "read", 20_000);
      await waitFor(
        () => owed().some((o) => o.pid !== first && o.spoke !== undefined),
        20_000,
        "the impostor",
      );
      if (era === "modern") {
        // the client's subscription is re-opened on the next process (after its handshake, so
        // after the lines it wrote under the old ids were read)
        await waitFor(
          () => owed().some((o) => o.pid !== first && o.method === "subscriptions/listen"),
          20_000,
          "the re-opened subscription",
        );
        await gw.next(
          (m) =>
            m.method === "notifications/subscriptions/acknowledged" &&
            (m.params as { _meta?: Record<string, unknown> })?._meta?.[SUB] === "listen:0",
          20_000,
        );
      }
      // a request answered by the next process: every line before it was read
      expect(
        (await gw.request("tools/call", params({ name: "echo", arguments: {} }), 20_000)).result,
      ).toBeDefined();

      // the requests the dead process owed were answered once, by the gateway, epoch_transition
      for (const answer of [call, read])
        expect(answer.error?.data, JSON.stringify(answer)).toMatchObject({ error: "epoch_transition" });
      const seen = gw.messages();
      expect(seen.filter((m) => m.id === "call" || m.id === "read")).toHaveLength(2);
      // nothing the impostor said reached the client: no answer under the subscription's id, no
      // notification of it
      expect(JSON.stringify(seen)).not.toMatch(/impostor:\/\/|impostor \d/);
      expect(seen.filter((m) => m.id === "listen:0")).toEqual([]);
      // and the gateway said what it dropped
      expect(gw.stderr()).toMatch(
        era === "modern" ? /under id \d+: that id was written to another server process/ : /unknown id/,
      );
      expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
    }, 90_000);
  }
});
