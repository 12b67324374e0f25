// A session grant names its tool exactly: a tool whose name differs from the approved one only by
// case, a trailing space, a zero-width character, its compatibility form (full-width letters,
// which NFKC folds to ASCII) or its canonical form (NFD against NFC) is another tool, and a call of
// it asks a human. Real gateway, the catalog fixture (which answers a call of any name), the
// approvals given by the real CLI with the passphrase.
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { expect, it, onTestFinished } from "vitest";
import { decideByCli, nextStoredRequest, storedPending, waitForPending } from "../helpers/approvals.js";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

const tool = (name: string): ToolDef => ({
  name,
  description: "Deploy a branch.",
  inputSchema: { type: "object", properties: { branch: { type: "string" } } },
});
const APPROVED = ["deploy", "caf\u00e9"];
const VARIANTS = [
  "Deploy",
  "deploy ",
  "deploy\u200b",
  "\uff44\uff45\uff50\uff4c\uff4f\uff59", // full-width: NFKC makes it "deploy"
  "cafe\u0301", // NFD of "café"
];

it("a grant for deploy (and café) covers no tool whose name only reads the same: each call asks a human, none reaches the server", async () => {
  for (const v of VARIANTS)
    expect(APPROVED).toContain(v.normalize("NFKC").toLowerCase().trim().replace("\u200b", ""));
  const stateDir = newStateDir();
  const cat = makeCatalog([...APPROVED, ...VARIANTS].map(tool));
  const gw = await startGateway({
    args: ["--label", "site", "--approval-timeout", "30000", "--", ...fixtureCommand("catalog")],
    env: cat.env,
    stateDir,
  });
  onTestFinished(() => cat.cleanup());
  onTestFinished(() => gw.close());
  await gw.client.listTools();
  const call = (name: string) =>
    gw.client.request(
      { method: "tools/call", params: { name, arguments: { branch: "main" } } },
      CallToolResultSchema,
    );
  const seen = new Set<string>();
  for (const name of APPROVED) {
    const answer = call(name);
    const req = await nextStoredRequest(stateDir, seen);
    expect(req.tool).toBe(name);
    await decideByCli(stateDir, "approve", req.request, "--for", "session");
    await answer;
    await call(name); // covered now: no request
  }
  expect(storedPending(stateDir)).toEqual([]);

  const waiting = VARIANTS.map((name) =>
    call(name).then(
      () => "answered",
      () => "refused",
    ),
  );
  const asked = await waitForPending(
    stateDir,
    (l) => (l.length === VARIANTS.length ? l : null),
    20_000,
    "a request for each look-alike",
    storedPending,
  );
  expect(asked.map((p) => p.tool).sort()).toEqual([...VARIANTS].sort());
  await gw.close();
  expect(await Promise.all(waiting)).toEqual(VARIANTS.map(() => "refused"));
  expect(cat.records().map((r) => r.tool)).toEqual(["deploy", "deploy", "caf\u00e9", "caf\u00e9"]);
});
