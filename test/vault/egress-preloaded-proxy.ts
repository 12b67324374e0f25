// A gateway in front of the egress fixture server with `egress: "record"`: a proxy of its own
// whether or not a credential declares a host, which reads absolute-form requests (and tunnels to
// the declared hosts). Its Node may be preloaded with a fixture that changes Node's own ways (a
// feature the egress proxy tests for at its start made to fail or to take long). For the tests of
// the proxy's fallbacks where such a way does not work (hostile-egress-interim-fallback,
// hostile-egress-refused-writes-fallback) and of the reading past a refused write
// (hostile-egress-reset-after-answer and its -loaded sibling).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { REPO } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { egressKit, type Gw, nodeServer, proxyPort } from "./egress-kit.js";

export interface RecordingProxyOptions {
  /** `test/fixtures/<preload>`, required before the gateway's own code */
  preload?: string;
  /** the gateway's environment, besides the test's */
  env?: Record<string, string>;
  /** the hosts an HTTP-delivered credential declares, its secret stored first (none: no credential) */
  declared?: string[];
}

/** The gateway, its tools listed, its state directory and its proxy's port. */
export async function recordingProxy(
  dirPrefix: string,
  o: RecordingProxyOptions = {},
): Promise<{ gw: Gw; port: number; stateDir: string }> {
  const dir = tempDir(dirPrefix);
  const stateDir = newStateDir();
  const credentials = o.declared
    ? { credentials: { API_KEY: { secret: "inventory-api", deliver: "http", hosts: o.declared } } }
    : {};
  if (o.declared) await egressKit().storeHttpSecret(stateDir, ...o.declared);
  writeFileSync(
    join(dir, "portcullis.json"),
    JSON.stringify({ servers: { api: { ...nodeServer, egress: "record", ...credentials } } }),
  );
  const gw = await startGateway({
    args: ["api"],
    cwd: dir,
    stateDir,
    ...(o.env ? { env: o.env } : {}),
    ...(o.preload ? { nodeFlags: ["--require", join(REPO, "test", "fixtures", o.preload)] } : {}),
  });
  await gw.client.listTools();
  return { gw, port: await proxyPort(gw), stateDir };
}

/** The gateway, its tools listed, with `test/fixtures/<fixture>` required before its own code, and its proxy's port. */
export async function preloadedProxy(fixture: string, dirPrefix: string): Promise<{ gw: Gw; port: number }> {
  return recordingProxy(dirPrefix, { preload: fixture });
}
