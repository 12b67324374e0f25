// The columns of a grant that its signature does not cover (the approved tool definitions,
// `ended_at`, `revoked_at`), rewritten by a same-user process with plain SQL: a real gateway in
// front of the catalog fixture, the real CLI deciding with the passphrase, and the fixture's
// record of every call it received as the ground truth of what was forwarded.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextRequest, pending } from "../helpers/approvals.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const PAY = {
  name: "send_payment",
  description: "Send money.",
  inputSchema: {
    type: "object",
    required: ["to", "amount"],
    properties: { to: { type: "string" }, amount: { type: "number" } },
  },
};
const FETCH = {
  name: "fetch_page",
  description: "Fetch a page of the wiki.",
  inputSchema: {
    type: "object",
    required: ["page"],
    properties: { page: { type: "string" } },
    additionalProperties: false,
  },
};
// The same tool with a new input: an expansion of its authority.
const FETCH_URL = {
  ...FETCH,
  inputSchema: { ...FETCH.inputSchema, properties: { page: { type: "string" }, url: { type: "string" } } },
};

const TIMEOUT = -32058;
const STALE = -32051;

function refusal(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

function writeTools(file: string, tools: unknown[]): void {
  writeFileSync(`${file}.tmp`, JSON.stringify(tools));
  // atomic, as the fixture asks
  writeFileSync(file, readFileSync(`${file}.tmp`));
}

async function setup(tools: unknown[], runArgs: string[]) {
  const stateDir = newStateDir();
  const dir = tempDir("portcullis-unsigned-");
  const toolsFile = join(dir, "tools.json");
  const record = join(dir, "record.jsonl");
  writeTools(toolsFile, tools);
  cleanup.push(() => {
    removeDir(dir);
    removeDir(stateDir);
  });
  const gw = await startGateway({
    stateDir,
    args: ["--label", "bank", "--approval-timeout", "3000", ...runArgs, "--", NODE, FIXTURES.catalog],
    env: { FIXTURE_CATALOG: toolsFile, FIXTURE_RECORD: record },
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  const db = new Database(join(stateDir, "portcullis.db"));
  db.pragma("busy_timeout = 10000");
  cleanup.push(() => db.close());
  const received = () =>
    existsSync(record)
      ? readFileSync(record, "utf8")
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l).args as Record<string, unknown>)
      : [];
  return { stateDir, gw, db, toolsFile, received };
}

describe("columns a grant's signature does not cover, rewritten with SQL", () => {
  it("a one-call grant un-ended after its call covers no second call", async () => {
    const { stateDir, gw, db, received } = await setup([PAY], ["--approval", "per-call"]);
    const args = { to: "mallory", amount: 100 };
    const first = gw.client.callTool({ name: "send_payment", arguments: args });
    const req = await nextRequest(stateDir);
    await decideByCli(stateDir, "approve", req.request);
    expect((await first).isError).toBeFalsy();
    expect(received()).toEqual([args]);

    // The same call again, after the store writer cleared the grant's end: a human is asked
    // again (nobody answers here), and the server receives nothing more.
    const undone = db.prepare(
      "UPDATE grants SET ended_at = NULL, ended_reason = NULL WHERE mode = 'per-call'",
    );
    expect(undone.run().changes).toBe(1);
    const again = gw.client.callTool({ name: "send_payment", arguments: args });
    await waitFor(async () => (await pending(stateDir)).length === 1, 10_000, "a new request");
    undone.run(); // and once more while the call waits for a human
    await expect(again).rejects.toSatisfy((e) => refusal(e).code === TIMEOUT);
    expect(received()).toEqual([args]);
  });

  it("a revoked session grant whose revoke is undone covers nothing once the gateway saw it end", async () => {
    const { stateDir, gw, db, received } = await setup([PAY], ["--approval", "session"]);
    const first = gw.client.callTool({ name: "send_payment", arguments: { to: "alice", amount: 1 } });
    const req = await nextRequest(stateDir);
    await decideByCli(stateDir, "approve", req.request, "--for", "session");
    expect((await first).isError).toBeFalsy();
    const grant = (db.prepare("SELECT grant_id FROM grants").get() as { grant_id: string }).grant_id;
    expect((await runCli(["revoke", grant, "--state-dir", stateDir])).code).toBe(0);

    // The gateway sees the revoke at the next call (which asks a human, and times out) …
    const seen = new Set((await pending(stateDir)).map((p) => p.request));
    const second = gw.client.callTool({ name: "send_payment", arguments: { to: "bob", amount: 2 } });
    await nextRequest(stateDir, seen);
    await expect(second).rejects.toSatisfy((e) => refusal(e).code === TIMEOUT);
    // … then the store writer undoes it: the signed grant is back in the live set, untouched.
    db.prepare("UPDATE grants SET revoked_at = NULL, ended_at = NULL, ended_reason = NULL").run();
    const third = gw.client.callTool({ name: "send_payment", arguments: { to: "mallory", amount: 3 } });
    await expect(third).rejects.toSatisfy((e) => refusal(e).code === TIMEOUT);
    expect(received()).toEqual([{ to: "alice", amount: 1 }]);
  });

  it("a review rewritten before the human reads it: the approval of what was shown covers nothing", async () => {
    const { stateDir, gw, db, received } = await setup(
      [PAY],
      ["--approval", "per-call", "--approval-timeout", "60000"],
    );
    const call = gw.client.callTool({ name: "send_payment", arguments: { to: "mallory", amount: 10000 } });
    const outcome = call.then(
      () => "answered",
      (e) => refusal(e).code,
    );
    const req = await nextRequest(stateDir);
    const row = db
      .prepare("SELECT review_json FROM approval_requests WHERE request = ?")
      .get(req.request) as {
      review_json: string;
    };
    const fake = row.review_json.replaceAll("mallory", "alice").replaceAll("10000", "10");
    db.prepare("UPDATE approval_requests SET review_json = ? WHERE request = ?").run(fake, req.request);

    // The human reads the rewritten review and approves it, signed: the gateway wrote another
    // review, so the grant covers nothing, and it says why; the call keeps waiting.
    const shown = await runCli(["approvals", "--state-dir", stateDir]);
    expect(shown.stdout).toContain("alice");
    expect(shown.stdout).not.toContain("mallory");
    await decideByCli(stateDir, "approve", req.request);
    await gw.waitForStderr(/is not honoured: it approves a review this gateway did not write/, 20_000);
    expect(received()).toEqual([]);
    await gw.close();
    expect(await outcome).not.toBe("answered");
    expect(received()).toEqual([]);
  });

  it("an approved definition rewritten to match an expanded tool does not make the expansion cosmetic", async () => {
    const { stateDir, gw, db, toolsFile, received } = await setup(
      [FETCH],
      ["--approval", "session", "--on-expand", "tool"],
    );
    const first = gw.client.callTool({ name: "fetch_page", arguments: { page: "a" } });
    const req = await nextRequest(stateDir);
    await decideByCli(stateDir, "approve", req.request, "--for", "session");
    expect((await first).isError).toBeFalsy();

    // Within the epoch the tool gains a `url` input; the store writer makes the grant's approved
    // definition a whitespace variant of the new one (a cosmetic difference, if it were believed).
    writeTools(toolsFile, [FETCH_URL]);
    await waitFor(
      async () => JSON.stringify((await gw.client.listTools()).tools).includes('"url"'),
      10_000,
      "the expanded tool listed",
    );
    const forged = { fetch_page: { ...FETCH_URL, description: `${FETCH_URL.description} ` } };
    expect(db.prepare("UPDATE grants SET tool_defs_json = ?").run(JSON.stringify(forged)).changes).toBe(1);

    const call = gw.client.callTool({
      name: "fetch_page",
      arguments: { page: "a", url: "http://attacker.example/" },
    });
    await expect(call).rejects.toSatisfy(
      (e) => refusal(e).code === STALE && refusal(e).data.reason === "tool authority expanded",
    );
    expect(received()).toEqual([{ page: "a" }]);
  });
});
