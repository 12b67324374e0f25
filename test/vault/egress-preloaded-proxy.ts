// A gateway whose Node is preloaded with a fixture that changes Node's own ways (a feature the
// egress proxy tests for at its start made to fail), in front of the egress fixture server with
// no credential and `egress: "record"`: a proxy of its own all the same, which reads
// absolute-form requests. For the tests of the proxy's fallbacks where such a way does not work
// (hostile-egress-interim-fallback, hostile-egress-refused-writes-fallback).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { REPO } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { type Gw, nodeServer, proxyPort } from "./egress-kit.js";

/** The gateway, its tools listed, with `test/fixtures/<fixture>` required before its own code, and its proxy's port. */
export async function preloadedProxy(fixture: string, dirPrefix: string): Promise<{ gw: Gw; port: number }> {
  const dir = tempDir(dirPrefix);
  writeFileSync(
    join(dir, "portcullis.json"),
    JSON.stringify({ servers: { api: { ...nodeServer, egress: "record" } } }),
  );
  const gw = await startGateway({
    args: ["api"],
    cwd: dir,
    stateDir: newStateDir(),
    nodeFlags: ["--require", join(REPO, "test", "fixtures", fixture)],
  });
  await gw.client.listTools();
  return { gw, port: await proxyPort(gw) };
}
