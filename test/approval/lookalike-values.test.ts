// An agent asks for one call whose argument reads as something the human trusts and is not:
// `https://gіthub.com/…` with a Cyrillic `і`, a payee `pаypal.me/…` with a Cyrillic `а` inside an
// object. A one-call approval is of the values the human reads, and nothing on the line told
// them apart. A real gateway in front of the catalog fixture asks; the card, the full review and
// the console's page must each flag the mixed values (look-alikes written as escapes), and
// leave accented Latin and text wholly in another script alone.
import { afterEach, describe, expect, it } from "vitest";
import { httpLogin, raw, startConsoleProcess } from "../console/helpers.js";
import { nextStoredRequest } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { catalogGateway } from "../helpers/catalogGateway.js";
import { runCli } from "../helpers/gateway.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const ARGS = {
  url: "https://g\u0456thub.com/acme/app",
  payee: { name: "Acme", at: "p\u0430ypal.me/acme" },
  note: "café crème",
  title: "Привет мир",
};

describe("argument values that mix Latin letters with look-alikes", () => {
  it("are flagged, look-alikes escaped, in the card, the full review and the console; accents and other scripts alone are not", async () => {
    const cat = makeCatalog([
      {
        name: "fetch_url",
        description: "Fetches a page.",
        inputSchema: {
          type: "object",
          properties: {
            url: { type: "string" },
            payee: { type: "object" },
            note: { type: "string" },
            title: { type: "string" },
          },
        },
      },
    ]);
    const { gw, stateDir } = await catalogGateway(
      cat,
      ["--label", "web", "--approval", "per-call", "--approval-timeout", "60000"],
      cleanup,
    );
    void gw.client.callTool({ name: "fetch_url", arguments: ARGS }).catch(() => {});
    const req = await nextStoredRequest(stateDir);

    const flagged = [
      '"https://g\\u{456}thub.com/acme/app" mixes Latin letters with look-alikes',
      '"p\\u{430}ypal.me/acme" mixes Latin letters with look-alikes',
    ];
    for (const args of [["approvals"], ["approvals", "--verbose"]]) {
      const r = await runCli([...args, "--state-dir", stateDir]);
      expect(r.code, r.stderr).toBe(0);
      const warnings = r.stdout.split("\n").filter((l) => l.includes("mixes Latin letters"));
      expect(warnings).toHaveLength(2);
      for (const [i, w] of warnings.entries()) {
        expect(w).toMatch(/^\s+! /);
        expect(w).toContain(flagged[i]);
      }
    }

    const console_ = await startConsoleProcess(stateDir);
    cleanup.push(() => console_.stop());
    const session = await httpLogin(console_.url);
    const page = await raw(`${console_.url}/requests/${req.request}`, {
      headers: { Cookie: session.cookie },
    });
    expect(page.status).toBe(200);
    const shown = [...page.body.matchAll(/data-testid="mixed-script-value">([^<]*)</g)].map((m) => m[1]);
    expect(shown).toEqual(flagged.map((f) => expect.stringContaining(f.replaceAll('"', "&quot;"))));
  });
});
