// docs/configuration.md is the one list of portcullis.json's keys: every key a server entry
// accepts has its row there, and the doc's example is a file the loader accepts, so the two
// cannot drift apart unseen.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfigFile, SERVER_KEYS } from "../../src/config/config.js";
import { REPO } from "../helpers/paths.js";

const doc = readFileSync(join(REPO, "docs", "configuration.md"), "utf8");

/** The first cell of every table row, as written between backticks (`approval.default` → approval). */
function documentedKeys(): Set<string> {
  const out = new Set<string>();
  for (const m of doc.matchAll(/^\| `([^`]+)`/gm)) out.add(m[1]!.split(/[.\s]/)[0]!);
  return out;
}

describe("docs/configuration.md", () => {
  it("has a row for every key a server entry accepts, and for the top-level keys", () => {
    const documented = documentedKeys();
    for (const key of [...SERVER_KEYS, "servers", "mcpServers", "$schema", "console"])
      expect(documented.has(key), key).toBe(true);
  });

  it("its example is a configuration the loader accepts", () => {
    const example = /## An example\n\n```json\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(example).toBeDefined();
    const file = join(mkdtempSync(join(tmpdir(), "pc-config-doc-")), "portcullis.json");
    writeFileSync(file, example!);
    const servers = loadConfigFile(file);
    expect([...servers.keys()]).toEqual(["inventory-local", "docs-remote"]);
    expect(servers.get("inventory-local")!.egress).toBe("declared-only");
  });
});
