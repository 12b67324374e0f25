import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { removeDir, tempDir } from "./files.js";
import { NODE, REPO } from "./paths.js";
import { type RawGateway, rawGateway } from "./raw.js";

/** The hostile-asker fixture (test/fixtures/README.md): its `send` tool writes the server's lines. */
export const ASKER_FIXTURE = join(REPO, "test", "fixtures", "servers", "hostile-asker.mjs");

/**
 * A raw client on a gateway (label `asker`, `--approval none`) before the hostile-asker fixture;
 * with `log`, the fixture writes there every line it receives (FIXTURE_ASKER_LOG).
 */
export function askerGateway(log?: string): RawGateway {
  return rawGateway({
    args: ["--label", "asker", "--approval", "none", "--", NODE, ASKER_FIXTURE],
    ...(log ? { env: { FIXTURE_ASKER_LOG: log } } : {}),
  });
}

/**
 * The id the fixture got the request of `method` with (the gateway's wire id), from the log
 * askerGateway(log) made it write; undefined until it has one.
 */
export function askerWireIdOf(log: string, method: string): unknown {
  if (!existsSync(log)) return undefined;
  for (const l of readFileSync(log, "utf8").split("\n")) {
    if (l === "") continue;
    const m = JSON.parse(JSON.parse(l).line) as { id?: unknown; method?: string };
    if (m.method === method) return m.id;
  }
  return undefined;
}

/**
 * askerGateway with its log in a temporary directory, past its handshake and first list; both are
 * undone by `cleanup` (a test file's list of what its afterEach runs).
 */
export async function loggedAskerGateway(
  cleanup: (() => Promise<void> | void)[],
): Promise<{ peer: RawGateway; log: string }> {
  const dir = tempDir();
  cleanup.push(() => removeDir(dir));
  const log = join(dir, "asker.log");
  const peer = askerGateway(log);
  cleanup.push(() => peer.close());
  expect((await peer.initialize()).result, peer.stderr()).toBeDefined();
  expect((await peer.request("tools/list")).result).toBeDefined();
  return { peer, log };
}
