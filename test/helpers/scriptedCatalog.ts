import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { completeLines } from "./completeLines.js";
import { removeDir, tempDir } from "./files.js";
import { bundledFixture } from "./fixtureBundle.js";
import { NODE, REPO } from "./paths.js";
import { type RawGateway, rawGateway } from "./raw.js";

/** The hostile-catalog fixture: a server whose answers a script (FIXTURE_SCRIPT) writes. */
export const HOSTILE_CATALOG =
  bundledFixture(REPO, "hostile-catalog") ?? join(REPO, "test", "fixtures", "servers", "hostile-catalog.mjs");

/**
 * A raw client on a gateway before the hostile-catalog fixture run by `script` (a module's text:
 * its `list(params)` answers tools/list), in a directory of its own; `configure(dir, server)`
 * may write a portcullis.json there (the gateway then runs with `args`, from that directory).
 * What the server received, one JSON message per line. `cleanup` closes the gateway and
 * removes the directory.
 */
export async function scriptedCatalogGateway(o: {
  script: string;
  args: string[];
  cleanup: (() => Promise<void> | void)[];
  configure?: (dir: string, server: { command: string; args: string[] }) => void;
}): Promise<{ gw: RawGateway; dir: string; received: () => string[] }> {
  const dir = tempDir("portcullis-scripted-catalog-");
  o.cleanup.push(() => removeDir(dir));
  const script = join(dir, "script.mjs");
  const log = join(dir, "received.jsonl");
  writeFileSync(script, o.script);
  o.configure?.(dir, { command: NODE, args: [HOSTILE_CATALOG] });
  const args = o.configure ? o.args : [...o.args, "--", NODE, HOSTILE_CATALOG];
  const env = { FIXTURE_SCRIPT: script, FIXTURE_LOG: log };
  const gw = rawGateway(o.configure ? { args, cwd: dir, env } : { args, env });
  o.cleanup.push(() => gw.close());
  await gw.initialize();
  // only lines written whole: the server may be writing the next one as this reads
  const received = () => completeLines(existsSync(log) ? readFileSync(log, "utf8") : "").filter(Boolean);
  return { gw, dir, received };
}
