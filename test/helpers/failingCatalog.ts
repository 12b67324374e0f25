// A gateway whose server's tools/list always fails (the catalog fixture, official SDK, with
// FIXTURE_LIST_FAIL set), held requests waiting far past what a test waits for an answer: only an
// answer given at once passes. What the catalog_unavailable tests start from.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeCatalog } from "./catalog.js";
import { fixtureCommand } from "./paths.js";
import { type RawGateway, rawGateway } from "./raw.js";

/**
 * The gateway (label nolist, `--approval none`, `--hold-timeout 120000`) and the file whose
 * presence makes the list fail (removed: the server is fixed; `FILE.count` counts its lists); its
 * end and its server's pushed on `cleanup`.
 */
export function failingCatalogGateway(cleanup: (() => Promise<void> | void)[]): {
  gw: RawGateway;
  failing: string;
} {
  const cat = makeCatalog([{ name: "echo", inputSchema: { type: "object" } }]);
  const failing = join(cat.dir, "fail");
  writeFileSync(failing, "");
  const gw = rawGateway({
    args: [
      "--label",
      "nolist",
      "--approval",
      "none",
      "--hold-timeout",
      "120000",
      "--",
      ...fixtureCommand("catalog"),
    ],
    env: { ...cat.env, FIXTURE_LIST_FAIL: failing },
  });
  cleanup.push(
    () => gw.close(),
    () => cat.cleanup(),
  );
  return { gw, failing };
}
