// The bearer token files `run --listen` would read: a host entry's --listen-token-file, a
// portcullis.json's listenTokenFile. `run --listen` refuses one that other users may read or
// change (src/transport/httpAccess.ts, refuseSharedTokenFile): the token is what keeps them out
// of the server. Doctor says so before the gateway refuses to start. Only the file's mode is
// looked at (stat): its token is never read, so never printed.
import { statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { quotedName } from "../catalog/text.js";
import { ConfigError, findConfig, loadConfigFile } from "../config/config.js";
import { shellWord } from "../util/shellWord.js";
import { entryRun, startDir } from "./doctorLabels.js";
import type { Entry } from "./document.js";
import type { HostFile } from "./hosts.js";

interface ListenFinding {
  ok: boolean;
  what: string;
  next: string;
}

/** A token file and where it is named (a host entry's args, a portcullis.json label). */
export interface NamedTokenFile {
  file: string;
  /** `FILE: server "KEY"` or `FILE: listenTokenFile of "LABEL"`: the place a human edits */
  where: string;
}

/**
 * The token files of one host entry that runs portcullis: its --listen-token-file (resolved where
 * the host starts it; a relative one for a host whose start directory is not known is left out),
 * else, for a label without --no-auth, that label's listenTokenFile in the portcullis.json the
 * gateway would read.
 */
export function entryTokenFiles(host: HostFile, key: string, entry: Entry, cwd: string): NamedTokenFile[] {
  const run = entryRun(entry);
  if (run.kind !== "label" && run.kind !== "command" && run.kind !== "url") return [];
  const start = startDir(host, entry, cwd);
  const where = `${host.file}: server ${quotedName(key)}`;
  const at = (p: string) => (isAbsolute(p) ? resolve(p) : start ? resolve(start.dir, p) : null);
  if (run.listenTokenFile !== undefined) {
    const file = at(run.listenTokenFile);
    return file === null ? [] : [{ file, where: `${where} (--listen-token-file)` }];
  }
  if (run.kind !== "label" || run.noAuth) return [];
  const config = run.config !== undefined ? at(run.config) : start ? findConfig(start.dir) : null;
  if (config === null) return [];
  return configTokenFiles(config)
    .filter((t) => t.label === run.label)
    .map((t) => ({ file: t.file, where }));
}

/** Every listenTokenFile of a portcullis.json (absolute there); none when it cannot be read (said elsewhere). */
export function configTokenFiles(config: string): (NamedTokenFile & { label: string })[] {
  try {
    return [...loadConfigFile(config).entries()].flatMap(([label, s]) =>
      s.listenTokenFile === undefined
        ? []
        : [{ file: s.listenTokenFile, label, where: `${config}: listenTokenFile of ${quotedName(label)}` }],
    );
  } catch (e) {
    if (e instanceof ConfigError) return [];
    throw e;
  }
}

/** The portcullis.json found from `cwd`'s token files (what `run LABEL` from here reads). */
export function nearbyTokenFiles(cwd: string): NamedTokenFile[] {
  const config = findConfig(cwd);
  return config === null ? [] : configTokenFiles(config);
}

/**
 * One problem per token file that other users may read or change (group or other bits), naming
 * every place it is given, with the chmod that fixes it. A file that is missing or cannot be
 * looked at is left to `run`, which says why it cannot read it.
 */
export function tokenFileFindings(named: readonly NamedTokenFile[]): ListenFinding[] {
  const places = new Map<string, string[]>();
  for (const n of named) {
    const list = places.get(n.file) ?? [];
    if (!list.includes(n.where)) list.push(n.where);
    places.set(n.file, list);
  }
  const out: ListenFinding[] = [];
  for (const [file, where] of places) {
    let mode: number;
    try {
      mode = statSync(file).mode & 0o777;
    } catch {
      continue;
    }
    if ((mode & 0o077) === 0) continue;
    out.push({
      ok: false,
      what: `${where.join("; ")}: the listen token file ${file} may be read or changed by other users (mode ${mode.toString(8).padStart(3, "0")}), so 'portcullis run --listen' refuses to start with it (the token is what keeps them out of the server)`,
      next: `chmod 600 ${shellWord(file)}`,
    });
  }
  return out;
}
