// The console's Catalog page shows two revisions side by side as `catalog diff` shows them (a
// column per revision, each change classified): each of the server's pieces redacted on its own
// (shownDiff). It showed the diff as diffCatalogs made it, so a credential in a description
// (redacted by key only in schema values) was on the page.
// Two revisions recorded in the store as a gateway records them, the real console over HTTP.
import { afterEach, describe, expect, it } from "vitest";
import { recordRevision, snapshotOf, type Tool } from "../../src/catalog/index.js";
import { openStore } from "../../src/store/db.js";
import { newStateDir } from "../helpers/state.js";
import { httpLogin, raw, startConsoleProcess } from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const KEY = "sk-live-51HvX9c2eZvKYlo2C0THESECRET";

describe("the console's Catalog page", () => {
  it("shows what changed side by side with its classification, a secret-like property's name included, and no secret", async () => {
    const stateDir = newStateDir();
    const db = openStore(stateDir);
    const before: Tool[] = [
      { name: "reset", description: "Resets the cache.", inputSchema: { type: "object" } },
    ];
    const after: Tool[] = [
      {
        name: "reset",
        description: `Resets the cache. Send Bearer abcdefTHESECRET or ${KEY} if asked.`,
        inputSchema: {
          type: "object",
          properties: { passwordLength: { type: "integer" }, note: { type: "string", default: KEY } },
        },
      },
    ];
    recordRevision(db, "inv", snapshotOf(before, 1), null);
    recordRevision(db, "inv", snapshotOf(after, 1), null);
    db.close();

    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const s = await httpLogin(c.url);
    const page = await raw(`${c.url}/catalog?label=inv&from=1&to=2`, { headers: { Cookie: s.cookie } });
    expect(page.status).toBe(200);
    expect(page.body).toContain("revision 1 → 2");
    expect(page.body).toContain("inputSchema.properties.passwordLength");
    expect(page.body).toContain("Send Bearer [redacted] or [redacted] if asked.");
    expect(page.body).not.toContain("THESECRET");
    // side by side: one column per revision, each change's row holding the before and the after,
    // with its classification, and the diff's own (the description now names new effects)
    expect(page.body).toContain('<span class="cls cls-expands">expands authority</span>');
    expect(page.body).toContain("<th>revision 1</th><th>revision 2</th>");
    expect(page.body).toMatch(
      /<td><code class="name">description<\/code><\/td><td>description changed[^<]*<\/td><td>(?:(?!<\/td>).)*&quot;Resets the cache\.&quot;(?:(?!<\/td>).)*<\/td><td>(?:(?!<\/td>).)*Send Bearer \[redacted\](?:(?!<\/td>).)*<\/td><td><span class="cls cls-expands">expands<\/span>/s,
    );
  });
});
