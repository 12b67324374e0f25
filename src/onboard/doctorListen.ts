// The bearer token files `run --listen` would read: a host entry's --listen-token-file, a
// portcullis.json's listenTokenFile. `run --listen` refuses one that other users may read or
// change (src/transport/httpAccess.ts, refuseSharedTokenFile): the token is what keeps them out
// of the server; and one it cannot read a token from (missing, unreadable, not a regular file, no
// token on its first line), or a listenTokenFile without listen. Doctor says so before the gateway
// refuses to start, asking run's own questions (fileToken, tokenFileWithoutListen) so the two
// cannot disagree. The token read is dropped at once: never printed.
import { statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { quotedName, safeText } from "../catalog/text.js";
import { ConfigError, findConfig, loadConfigFile } from "../config/config.js";
import { fileToken, TokenFileError, tokenFileWithoutListen } from "../transport/httpAccess.js";
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
  /** run's sentence when the file is refused for lack of listen (then the file is not read) */
  unserved?: string;
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
  return configTokenFiles(config, run.listen)
    .filter((t) => t.label === run.label)
    .map((t) => ({ file: t.file, where, ...(t.unserved ? { unserved: t.unserved } : {}) }));
}

/** Every listenTokenFile of a portcullis.json (absolute there); none when it cannot be read (said elsewhere). */
export function configTokenFiles(
  config: string,
  listenFlag?: string,
): (NamedTokenFile & { label: string })[] {
  try {
    return [...loadConfigFile(config).entries()].flatMap(([label, s]) => {
      if (s.listenTokenFile === undefined) return [];
      const unserved = tokenFileWithoutListen(s, listenFlag);
      const where = `${config}: listenTokenFile of ${quotedName(label)}`;
      return [{ file: s.listenTokenFile, label, where, ...(unserved ? { unserved } : {}) }];
    });
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
 * One problem per token file that `run --listen` would refuse, naming every place it is given:
 * one it cannot take a token from, with what to put there; one other users may read or change
 * (group or other bits), with the chmod that fixes it. And one per listenTokenFile given without
 * listen, which run refuses before reading the file.
 */
export function tokenFileFindings(named: readonly NamedTokenFile[]): ListenFinding[] {
  const out: ListenFinding[] = [];
  const places = new Map<string, string[]>();
  const unserved = new Map<string, string[]>();
  const placed = (map: Map<string, string[]>, key: string, where: string) => {
    const list = map.get(key) ?? [];
    if (!list.includes(where)) list.push(where);
    map.set(key, list);
  };
  for (const n of named) {
    if (n.unserved !== undefined) placed(unserved, n.unserved, n.where);
    else placed(places, n.file, n.where);
  }
  for (const [why, where] of unserved)
    out.push({
      ok: false,
      what: `${where.join("; ")}: ${why}, so 'portcullis run' refuses to start`,
      next: `add "listen": "127.0.0.1:PORT" to that server in the file (or --listen HOST:PORT to the entry's run), or remove its listenTokenFile`,
    });
  for (const [file, where] of places) {
    // the path is the file's or the entry's words: shown escaped in every output, --json included
    const shown = safeText(file);
    try {
      fileToken(file, `the listen token file ${shown}`);
    } catch (e) {
      if (!(e instanceof TokenFileError)) throw e;
      out.push({
        ok: false,
        what: `${where.join("; ")}: ${e.message}, so 'portcullis run --listen' refuses to start with it`,
        next: `put the token (at least 16 characters, no spaces) on the first line of the regular file ${shellWord(file)}, made yours alone (chmod 600), or name another file there`,
      });
      continue;
    }
    let mode: number;
    try {
      mode = statSync(file).mode & 0o777;
    } catch {
      continue;
    }
    if ((mode & 0o077) === 0) continue;
    out.push({
      ok: false,
      what: `${where.join("; ")}: the listen token file ${shown} may be read or changed by other users (mode ${mode.toString(8).padStart(3, "0")}), so 'portcullis run --listen' refuses to start with it (the token is what keeps them out of the server)`,
      next: `chmod 600 ${shellWord(file)}`,
    });
  }
  return out;
}
