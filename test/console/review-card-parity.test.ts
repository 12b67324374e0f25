// The console's review card said less than the terminal's. `approve` (and `approvals`) print,
// under the credential scopes, that the tool may use every credential of the server when it
// declares none of its own, and "NEW egress" with the destinations the current epoch's server
// contacted that the last approved epoch's never did (the egress record): what new code talks to
// is what a human reviewing a changed server most needs. The console's card showed neither, so a
// human deciding there approved a server that had begun talking to a new host without being told.
// Nor did it say, for a server reached over HTTP (`run --url`), which one it is: its URL, its
// certificate chain's digest and its serverInfo, which the terminal's card prints.
import { describe, expect, it } from "vitest";
import { renderReview, renderReviewCard } from "../../src/approval/render.js";
import { decideRequest } from "../../src/approval/requests.js";
import { reviewCard } from "../../src/console/card.js";
import { escapeHtml } from "../../src/console/html.js";
import type { ExecutionRecord } from "../../src/identity/index.js";
import type { Store } from "../../src/store/db.js";
import {
  callOf,
  makeAuthorizer,
  pendingOf,
  publishPreview,
  signer,
  testRun,
  twoConnectionsPerTest,
} from "../approval/helpers.js";

const EPOCH = "01JQ7R4S4S0QJ7GZP1S2AAAAAA";

let db: Store;
let other: Store;
twoConnectionsPerTest("portcullis-card-parity-", (s) => {
  ({ db, other } = s);
});

describe("the console's review card", () => {
  it("names the credentials the tool may use and the new egress destinations, as the terminal's review does", async () => {
    const run = testRun(db);
    // what the egress proxy recorded for this epoch: a host no approved epoch contacted
    const now = new Date().toISOString();
    db.prepare(
      `INSERT INTO egress_destinations (server_label, epoch, host, port, scheme, method, requests, released, refused, scopes_json, first_at, last_at)
       VALUES ('inventory-local', ?, 'exfil.example', 443, 'tunnel', 'CONNECT', 1, 0, 0, '[]', ?, ?)`,
    ).run(EPOCH, now, now);
    const { auth } = makeAuthorizer(db, run, { credentials: { DEPLOY_TOKEN: "deploy" } });
    const p = auth.obtain(callOf(publishPreview, EPOCH));
    const req = await pendingOf(other, run);

    const scopeNote = "this server declares no per-tool scopes: every tool may use every credential";
    for (const text of [renderReview(req), renderReviewCard(req)]) {
      expect(text).toContain(scopeNote);
      expect(text).toMatch(
        /NEW egress {2}exfil\.example:443 \(never contacted under the last approved epoch\)/,
      );
    }
    const card = String(reviewCard(req, "csrf"));
    expect.soft(card).toContain(escapeHtml(scopeNote));
    expect.soft(card).toMatch(/data-testid="new-egress"[^>]*>[^<]*<code>exfil\.example:443<\/code>/);
    decideRequest(other, req.request, { approve: false }, "test", signer());
    await p;
  });

  it("says which server reached over HTTP it is (URL, certificate chain, serverInfo), as the terminal's review does", async () => {
    const run = testRun(db);
    const remote = {
      url: "https://mcp.example/api",
      certificateChainSha256: `sha256:${"c".repeat(64)}`,
      certificate: null,
      serverInfo: { name: "example-mcp", version: "9.9" },
      protocolVersion: "2025-06-18",
      capabilities: {},
      session: null,
      headerNames: [],
    };
    const record = {
      serverLabel: "inventory-local",
      epoch: EPOCH,
      launchCommand: [],
      executable: null,
      runtime: null,
      entry: null,
      wrappers: [],
      lockfile: null,
      dependencyTree: null,
      identityInputs: null,
      workingDirectory: "",
      envDigest: "sha256:env",
      configDigest: "sha256:config",
      identityDigest: "sha256:remote",
      processes: [],
      processId: 0,
      startedAt: new Date().toISOString(),
      remote,
    } as unknown as ExecutionRecord;
    const { auth } = makeAuthorizer(db, run, { context: () => ({ record, revision: 1 }) });
    const p = auth.obtain(callOf(publishPreview, EPOCH));
    const req = await pendingOf(other, run);
    for (const text of [renderReview(req), renderReviewCard(req)]) {
      expect(text).toMatch(/remote {5}https:\/\/mcp\.example\/api/);
      expect(text).toContain(`tls chain  sha256:${"c".repeat(64)}`);
      expect(text).toMatch(/serverInfo .*example-mcp.* \(the server's own words\)/);
    }
    const card = String(reviewCard(req, "csrf"));
    expect.soft(card).toContain("<code>https://mcp.example/api</code>");
    expect.soft(card).toContain(`<code>sha256:${"c".repeat(64)}</code>`);
    expect
      .soft(card)
      .toMatch(
        /<dt>serverInfo<\/dt><dd><figure class="server-says" [^>]*>\s*<figcaption>The server says, as its serverInfo:<\/figcaption>\s*<pre [^>]*>[^<]*example-mcp[^<]*<\/pre>/,
      );
    decideRequest(other, req.request, { approve: false }, "test", signer());
    await p;
  });
});
