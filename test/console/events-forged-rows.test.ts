// /events read every pending request's fields and every gateway row twice a second, and any
// process of the user can write thousands of such rows into the store. The check now reads a stamp
// first (PRAGMA data_version, total_changes(); src/console/changes.ts) and the rows only when it
// has moved. What a page is told must stay the same: with 2,000 forged pending rows in the store,
// a new request and a decision made by another process are each still told as `change`. (Whether
// the idle check costs less is not asserted: a CPU-time bound is at the mercy of the machine.)
import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { removeDir, sleep, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { catalogFile, gatewayFor, httpLogin, raw, startConsoleProcess, TRANSFER_TOOL } from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** Opens /events; `changed()` resolves with its first `change` event, or rejects after `ms`. */
function stream(base: string, since: string, cookie: string) {
  let text = "";
  let notify: () => void = () => {};
  const req = request(
    `${base}/events?since=${encodeURIComponent(since)}`,
    { headers: { Cookie: cookie } },
    (res) => {
      res.setEncoding("utf8");
      res.on("data", (d) => {
        text += d;
        notify();
      });
    },
  );
  req.on("error", () => {});
  req.end();
  return {
    changed(ms = 20_000): Promise<void> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no change event in ${ms} ms: ${text}`)), ms);
        notify = () => {
          if (text.includes("event: change")) {
            clearTimeout(timer);
            resolve();
          }
        };
        notify();
      });
    },
    close: () => req.destroy(),
  };
}

/** Copies of the pending request `real`, `n` of them, written as any process of the user can. */
function forge(stateDir: string, real: string, n: number): void {
  const db = openStore(stateDir);
  const row = db.prepare("SELECT * FROM approval_requests WHERE request = ?").get(real) as Record<
    string,
    unknown
  >;
  const cols = Object.keys(row);
  const insert = db.prepare(
    `INSERT INTO approval_requests (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`,
  );
  db.transaction(() => {
    for (let i = 0; i < n; i++) insert.run(...Object.values({ ...row, request: `forged${i}` }));
  })();
  db.close();
}

const pendingIds = async (stateDir: string): Promise<string[]> => {
  const r = await runCli(["approvals", "--json", "--all", "--state-dir", stateDir]);
  const list = JSON.parse(r.stdout) as
    | { request?: string; id?: string }[]
    | { requests: { request: string }[] };
  const rows = Array.isArray(list) ? list : list.requests;
  return rows.map((x) => (x as { request?: string; id?: string }).request ?? (x as { id: string }).id);
};

describe("/events with thousands of forged pending rows", () => {
  it("still tells a page of a new request and of a decision made by another process", async () => {
    const stateDir = newStateDir();
    const dir = tempDir("portcullis-events-");
    cleanup.push(() => {
      removeDir(dir);
      removeDir(stateDir);
    });
    const gw = await gatewayFor(stateDir, catalogFile(dir, [TRANSFER_TOOL]), [], {
      PORTCULLIS_NO_CONSOLE: "1",
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const s = await httpLogin(c.url);
    const tagNow = async () =>
      /data-live="([^"]*)"/.exec(
        (await raw(`${c.url}/servers`, { headers: { Cookie: s.cookie } })).body,
      )![1]!;

    const first = gw.client
      .callTool({ name: "transfer", arguments: { to: "mallory", amount: 1 } })
      .catch((e) => e);
    const [real] = await waitFor(
      async () => {
        const ids = await pendingIds(stateDir);
        return ids.length === 1 ? ids : null;
      },
      20_000,
      "the first request",
    );
    forge(stateDir, real!, 2000);

    // the other gateway started (one gateway asks one at a time), and the store quiet again
    const other = await gatewayFor(stateDir, catalogFile(dir, [TRANSFER_TOOL]), [], {
      PORTCULLIS_NO_CONSOLE: "1",
    });
    cleanup.push(() => other.close());
    await other.client.listTools();
    let quiet = await tagNow();
    for (;;) {
      await sleep(1200);
      const next = await tagNow();
      if (next === quiet) break;
      quiet = next;
    }
    const idle = stream(c.url, quiet, s.cookie);
    cleanup.push(() => void idle.close());

    // a new request is told
    const second = other.client
      .callTool({ name: "transfer", arguments: { to: "bob", amount: 2 } })
      .catch((e) => e);
    await idle.changed();
    idle.close();

    // a decision made by another process (the CLI) is told
    await sleep(1200); // the second request's own commits all told
    const before = await tagNow();
    const deciding = stream(c.url, before, s.cookie);
    cleanup.push(() => void deciding.close());
    const denied = await runCli(["deny", real!, "--state-dir", stateDir], { env: passphraseEnv() });
    expect(denied.code, denied.stderr).toBe(0);
    await deciding.changed();
    expect(await tagNow()).not.toBe(before);
    await Promise.all([first, second].map((p) => Promise.race([p, sleep(100)])));
  });
});
