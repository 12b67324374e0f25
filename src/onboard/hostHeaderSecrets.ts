// The vault secrets the host entries found from here send as HTTP headers: an entry that runs
// `portcullis run --url URL --header-secret 'Name: FORMAT=SECRET'` (the by-hand guard of an HTTP
// server, docs/onboarding.md) names its secret in the host file's args, not in any
// portcullis.json. `vault list` read only portcullis.json, so it listed such a secret as used by
// no server, which invites its removal, and the gateway then refuses to start at the host's next
// launch. Read where doctor reads them (the host files found from the working directory, each
// entry's `run` arguments with run's own parsing, doctorLabels.ts), and only the names: a header
// secret's value is never in a host file.
import { isAbsolute, resolve } from "node:path";
import { commandLineServer, type ServerConfig } from "../config/config.js";
import { type HeaderSpec, parseHeaderSecretFlag } from "../supervisor/remoteHeaders.js";
import { entryRun } from "./doctorLabels.js";
import { readHostServers, readHostText } from "./document.js";
import { foundHostFiles } from "./hosts.js";

/** One `--header-secret` of a host entry that runs `portcullis run --url`. */
export interface HostHeaderSecretUse {
  /** the host file */
  file: string;
  /** the server's key in it */
  key: string;
  /** the header's name */
  header: string;
  /** the vault secret it takes its value from */
  secret: string;
  /** the server as run sees it (its URL and this header), for the host check run makes at start */
  server: ServerConfig;
}

/**
 * The `--header-secret` uses of the host entries found from `cwd` whose gateway uses the vault of
 * `stateDir`: an entry that names this state directory with `--state-dir`, or none (the gateway
 * then takes its host's default, which doctor takes for this one too: a use listed for a secret of
 * another vault costs a line, one left out reads as a secret nobody needs). A host file that does
 * not parse is passed over (doctor says what is wrong with it), and so is a flag run refuses
 * (doctor says that too: that gateway never starts).
 */
export function hostHeaderSecretUses(cwd: string, stateDir: string): HostHeaderSecretUse[] {
  const out: HostHeaderSecretUse[] = [];
  for (const f of foundHostFiles(cwd)) {
    let servers: ReturnType<typeof readHostServers>["servers"];
    try {
      servers = readHostServers(f, readHostText(f.file)).servers;
    } catch {
      continue;
    }
    for (const s of servers) {
      const run = entryRun(s.entry);
      if (run.kind !== "url" || run.headerSecrets.length === 0 || !URL.canParse(run.url)) continue;
      const dir = run.stateDir;
      if (dir !== undefined && !(isAbsolute(dir) && resolve(dir) === resolve(stateDir))) continue;
      const headers = run.headerSecrets
        .map((text) => parseHeaderSecretFlag(text))
        .filter((h): h is Extract<HeaderSpec, { secret: string }> => typeof h !== "string" && "secret" in h);
      const server = { ...commandLineServer(s.key, "", []), remote: { url: run.url, headers } };
      for (const h of headers)
        out.push({ file: f.file, key: s.key, header: h.name, secret: h.secret, server });
    }
  }
  return out;
}
