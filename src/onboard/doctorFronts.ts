/**
 * doctor: a host entry reached by URL whose URL is a portcullis `--listen` front of this state
 * directory. That is how a host that speaks HTTP is put behind portcullis (README, "Over HTTP:
 * run --listen": the host is given the front's URL and its bearer token), yet doctor took such an
 * entry for a server not behind portcullis ("to guard one, replace its entry by hand …") and its
 * Authorization header, the front's own token, for an upstream credential to move into the vault
 * behind a `run --url` of the front: a gateway in front of a gateway.
 */
import { findConfig, loadConfigFile } from "../config/config.js";
import { readListenInfos } from "../transport/httpInfo.js";
import type { Entry } from "./document.js";

/** The fronts by address (normalized: normalAddress), each with its label. */
export type Fronts = Map<string, string>;

/**
 * The `--listen` fronts this state directory records (a front's file is removed when it ends,
 * so a recorded one runs or was killed), and the `listen` of the labels of the portcullis.json
 * found from `cwd` (a front the host starts, or that is not running right now).
 */
export function listenFronts(stateDir: string, cwd: string): Fronts {
  const fronts: Fronts = new Map();
  for (const info of readListenInfos(stateDir)) {
    const at = normalAddress(info.url);
    if (at !== null) fronts.set(at, info.label);
  }
  try {
    const file = findConfig(cwd);
    if (file !== null)
      for (const server of loadConfigFile(file).values())
        if (server.listen !== undefined) {
          const at = normalAddress(`http://${server.listen}/mcp`);
          if (at !== null && !fronts.has(at)) fronts.set(at, server.label);
        }
  } catch {
    // a portcullis.json that does not load is a finding of its own (configFindings)
  }
  return fronts;
}

/** The label of the front the entry's "url" is, or null when it is none of them. */
export function frontOf(entry: Entry, fronts: Fronts): string | null {
  if (typeof entry.url !== "string") return null;
  const at = normalAddress(entry.url);
  return at === null ? null : (fronts.get(at) ?? null);
}

/** scheme, host, port (the default one written out) and path without a trailing slash. */
function normalAddress(url: string): string | null {
  try {
    const u = new URL(url);
    const port = u.port || (u.protocol === "https:" ? "443" : "80");
    let path = u.pathname;
    while (path.endsWith("/")) path = path.slice(0, -1);
    return `${u.protocol}//${u.hostname.toLowerCase()}:${port}${path}`;
  } catch {
    return null;
  }
}
