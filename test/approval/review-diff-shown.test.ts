// The approval review shows its catalog diff the way `catalog diff` does: each of the server's
// pieces redacted on its own, so the diff's own words show (`passwordLength: property added`,
// not `passwordLength: [redacted] added`) and no secret does, in `approvals --verbose`, the
// one-screen `approvals`, `approvals --json` and the console's card. A review stored before the
// review kept its diff (its `rendered` text the raw rendering) is still redacted whole. A real
// gateway in front of the catalog fixture asks, the real CLI and console show.
import { afterEach, describe, expect, it } from "vitest";
import { diffCatalogs, renderDiff, type Tool } from "../../src/catalog/index.js";
import { openStore } from "../../src/store/db.js";
import { httpLogin, raw, startConsoleProcess } from "../console/helpers.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { catalogGateway } from "../helpers/catalogGateway.js";
import { runCli } from "../helpers/gateway.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const KEY = "sk-live-51HvX9c2eZvKYlo2C0THESECRET";

const V1: ToolDef = {
  name: "configure",
  description: "Configures the shop.",
  inputSchema: {
    type: "object",
    properties: { settings: { type: "object", default: { region: "eu" } }, sample: { type: "string" } },
  },
};

/**
 * A secret nested in a changed default and in `examples`, a secret-like property name, and a new
 * tool named `token` whose description carries a bearer token (raw in the diff's rendering, as
 * text is). The one-screen card shows the diff's first lines: the new tool's.
 */
const V2: ToolDef[] = [
  {
    name: "configure",
    description: "Configures the shop.",
    inputSchema: {
      type: "object",
      properties: {
        settings: {
          type: "object",
          default: { region: "eu", auth: { password: "hunter2THESECRET" }, header: `Bearer ${KEY}` },
        },
        sample: { type: "string", examples: [{ api_key: "exampleTHESECRET1" }, KEY] },
        passwordLength: { type: "integer" },
      },
    },
  },
  {
    name: "token",
    description: "Mints a token. Send Bearer abcdefTHESECRET if asked.",
    inputSchema: { type: "object" },
  },
];

const WORDS = "inputSchema.properties.passwordLength: property added [sensitive: secret-like name]";
const OVER_REDACTED = "inputSchema.properties.passwordLength: [redacted] added";

describe("the approval review's catalog diff", () => {
  it("shows the diff's words and no secret in every view; a review stored the old way is redacted whole", async () => {
    const cat = makeCatalog([V1]);
    const { gw, stateDir } = await catalogGateway(
      cat,
      ["--label", "shop", "--approval-timeout", "60000"],
      cleanup,
    );
    const seen = new Set<string>();
    const first = gw.client.callTool({ name: "configure", arguments: {} });
    await decideByCli(stateDir, "approve", (await nextStoredRequest(stateDir, seen)).request);
    await first;

    const from = gw.received().length;
    cat.write(V2);
    await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
    await gw.client.listTools();
    void gw.client.callTool({ name: "configure", arguments: {} }).catch(() => {});
    const req = await nextStoredRequest(stateDir, seen);

    const cli = async (...args: string[]) => {
      const r = await runCli([...args, "--state-dir", stateDir]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toContain("THESECRET");
      return r.stdout;
    };
    const verbose = await cli("approvals", "--verbose");
    for (const line of [
      `      [expands] ${WORDS}`,
      "          passwordLength: integer",
      "      [expands] inputSchema.properties.sample: examples added",
      "      [expands] inputSchema.properties.settings: default changed",
    ])
      expect(verbose.split("\n"), line).toContain(`  ${line}`);
    expect(verbose).not.toContain(OVER_REDACTED);
    // the secrets are there, redacted (not left out)
    expect(verbose).toContain('"auth":"[redacted]"');
    expect(verbose).toContain("Bearer [redacted]");
    expect(verbose).toContain('after:  [{"api_key":"[redacted]"},"[redacted]"]');

    expect(verbose.split("\n")).toContain("    + added    token  expands");
    const card = await cli("approvals");
    expect(card.split("\n")).toContain("             + added    token  expands");
    expect(card).toContain('description: "Mints a token. Send Bearer [redacted] if asked."');

    const json = JSON.parse(await cli("approvals", "--json")) as {
      requests: { review: { catalog: { rendered: string; diff?: unknown } } }[];
    };
    const catalog = json.requests[0]!.review.catalog;
    expect(catalog.rendered).toContain(WORDS);
    expect(catalog.rendered).not.toContain(OVER_REDACTED);
    expect(JSON.stringify(catalog.diff)).toContain('"detail":"passwordLength: integer"');

    // the console's card of the request
    const consoleProcess = await startConsoleProcess(stateDir);
    cleanup.push(() => consoleProcess.stop());
    const session = await httpLogin(consoleProcess.url);
    const page = await raw(`${consoleProcess.url}/requests/${req.request}`, {
      headers: { Cookie: session.cookie },
    });
    expect(page.status).toBe(200);
    expect(page.body).toContain(WORDS);
    expect(page.body).not.toContain(OVER_REDACTED);
    expect(page.body).not.toContain("THESECRET");

    // A review as the code before this one stored it: no `diff`, `rendered` the raw rendering
    // (the description's bearer token in it). It is shown redacted whole, as it always was.
    const db = openStore(stateDir);
    try {
      const row = db
        .prepare("SELECT review_json FROM approval_requests WHERE request = ?")
        .get(req.request) as {
        review_json: string;
      };
      const review = JSON.parse(row.review_json) as {
        catalog: { revision: number; lastApprovedRevision: number; rendered: string; diff?: unknown };
        tool: { sinceLastGrant: { rendered: string; diff?: unknown } | null };
      };
      // the stored review keeps no secret of the diff either
      expect(row.review_json).not.toContain("THESECRET");
      const rawDiff = diffCatalogs([V1 as Tool], V2 as Tool[]);
      delete review.catalog.diff;
      review.catalog.rendered = renderDiff(rawDiff, {
        fromRevision: review.catalog.lastApprovedRevision,
        toRevision: review.catalog.revision,
      }).trimEnd();
      if (review.tool.sinceLastGrant) {
        delete review.tool.sinceLastGrant.diff;
        review.tool.sinceLastGrant.rendered = renderDiff(rawDiff).trimEnd();
      }
      expect(review.catalog.rendered).toContain("abcdefTHESECRET");
      db.prepare("UPDATE approval_requests SET review_json = ? WHERE request = ?").run(
        JSON.stringify(review),
        req.request,
      );
    } finally {
      db.close();
    }
    // (cli: no THESECRET in any of them, the raw bearer token included)
    const oldVerbose = await cli("approvals", "--verbose");
    expect(oldVerbose).toContain(OVER_REDACTED);
    expect(oldVerbose).not.toContain(WORDS);
    expect(await cli("approvals")).toContain("Send Bearer [redacted] if asked.");
    const oldJson = await cli("approvals", "--json");
    expect(oldJson).toContain(OVER_REDACTED);
    const oldPage = await raw(`${consoleProcess.url}/requests/${req.request}`, {
      headers: { Cookie: session.cookie },
    });
    expect(oldPage.body).toContain(OVER_REDACTED);
    expect(oldPage.body).not.toContain("THESECRET");

    // A review rewritten in the store (any process of the user can): a raw diff under `diff`, a
    // secret in a note portcullis itself writes, or a diff of another shape. Each piece is
    // redacted again as it is shown, and a shape not a diff's is shown as an older review.
    const rewrite = (catalog: Record<string, unknown>) => {
      const db2 = openStore(stateDir);
      try {
        const row = db2
          .prepare("SELECT review_json FROM approval_requests WHERE request = ?")
          .get(req.request) as {
          review_json: string;
        };
        const review = JSON.parse(row.review_json) as { catalog: Record<string, unknown> };
        review.catalog = { ...review.catalog, ...catalog };
        db2
          .prepare("UPDATE approval_requests SET review_json = ? WHERE request = ?")
          .run(JSON.stringify(review), req.request);
      } finally {
        db2.close();
      }
    };
    const forged = diffCatalogs([V1 as Tool], V2 as Tool[]);
    forged.entries[0]!.changes[0]!.newEffects = [`Bearer ${KEY}`];
    expect(JSON.stringify(forged)).toContain("abcdefTHESECRET");
    rewrite({ diff: forged, rendered: "forged" });
    const shownForged = await cli("approvals", "--verbose");
    expect(shownForged).toContain(WORDS);
    expect(shownForged).toContain("[new effects: Bearer [redacted]]");
    await cli("approvals", "--json");
    rewrite({ diff: { entries: "not a list" }, rendered: `shown whole: token ${KEY}` });
    expect(await cli("approvals", "--verbose")).toContain("shown whole: token [redacted]");
  });
});
