// The bearer token files `run --listen` would read: a host entry's --listen-token-file, a
// portcullis.json's listenTokenFile. `run --listen` refuses one that other users may read or
// change (src/transport/httpAccess.ts, refuseSharedTokenFile): the token is what keeps them out
// of the server; and one it cannot read a token from (missing, unreadable, not a regular file, no
// token on its first line), or a listenTokenFile without listen; and a host entry giving an HTTP
// front's option (--listen-token-file, --no-auth, --listen-max-sessions, --listen-idle-timeout)
// with no address to listen on. Doctor says so before the gateway refuses to start, asking run's
// own questions (fileToken, tokenFileWithoutListen, listenFlagWithoutListen) so the two cannot
// disagree. The token read is dropped at once: never printed.
import { statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { quotedName, safeText } from "../catalog/text.js";
import { CONFIG_FILE, ConfigError, findConfig, loadConfigFile } from "../config/config.js";
import {
  fileToken,
  LISTEN_ONLY_FLAGS,
  listenFlagWithoutListen,
  TokenFileError,
  tokenFileWithoutListen,
} from "../transport/httpAccess.js";
import { shellWord } from "../util/shellWord.js";
import { type EntryRun, entryRun, startDir } from "./doctorLabels.js";
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
    // refused before the file is read (entryListenFindings says so): nothing more to say of it
    if (entryListenRefusal(host, entry, cwd) !== null) return [];
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

/**
 * The address a host entry's gateway would listen on, as run finds it: its --listen, else, for a
 * portcullis.json label, that label's `listen`. `undefined` for none; null when doctor cannot tell
 * (the label's file is not found or does not load, or Claude Desktop with a relative --config:
 * each said by labelFindings, and run refuses it before it reads a listen flag).
 */
function entryListenAddress(
  host: HostFile,
  entry: Entry,
  cwd: string,
  run: EntryRun,
): string | undefined | null {
  if (run.listen !== undefined || run.kind !== "label") return run.listen;
  const start = startDir(host, entry, cwd);
  const config =
    run.config !== undefined
      ? isAbsolute(run.config)
        ? resolve(run.config)
        : start
          ? resolve(start.dir, run.config)
          : null
      : start
        ? findConfig(start.dir)
        : null;
  if (config === null) return null;
  try {
    const server = loadConfigFile(config).get(run.label);
    return server === undefined ? null : server.listen;
  } catch (e) {
    if (e instanceof ConfigError) return null;
    throw e;
  }
}

/**
 * Why the gateway of a host entry refuses to start for an HTTP front's option (--listen-token-file,
 * --no-auth, --listen-max-sessions, --listen-idle-timeout) given with no address to listen on, with
 * the entry's run read; or null: run's own question (listenFlagWithoutListen) and its sentence.
 */
function entryListenRefusal(
  host: HostFile,
  entry: Entry,
  cwd: string,
): { why: string; run: EntryRun } | null {
  const run = entryRun(entry);
  if (run.kind !== "label" && run.kind !== "command" && run.kind !== "url") return null;
  // none of the options given: no portcullis.json to read for the label's listen
  if (listenFlagWithoutListen(run.listenOnly, undefined) === null) return null;
  const address = entryListenAddress(host, entry, cwd, run);
  const why = address === null ? null : listenFlagWithoutListen(run.listenOnly, address);
  return why === null ? null : { why, run };
}

/**
 * One problem for a host entry whose `run` gives an HTTP front's option without an address to
 * listen on: the gateway the host starts exits 2 at every start with run's sentence, which this
 * repeats, naming the host file and the entry.
 */
export function entryListenFindings(host: HostFile, key: string, entry: Entry, cwd: string): ListenFinding[] {
  const refused = entryListenRefusal(host, entry, cwd);
  if (refused === null) return [];
  const { why, run } = refused;
  const flags = LISTEN_ONLY_FLAGS.filter((f) => run.listenOnly[f] !== undefined).map((f) => `"--${f}"`);
  // a label's listen may be given in its portcullis.json instead
  const orConfig =
    run.kind === "label"
      ? ` (or "listen": "127.0.0.1:PORT" to ${quotedName(run.label)} in its ${CONFIG_FILE})`
      : "";
  const file = safeText(host.file);
  return [
    {
      ok: false,
      what: `${file}: server ${quotedName(key)}: ${why}, so 'portcullis run' refuses to start (exit 2 at every start, and the host shows a server that does not connect)`,
      next: `add "--listen", "127.0.0.1:PORT" to the "args" of ${quotedName(key)} in ${file}${orConfig}, or remove ${flags.join(" and ")} from them`,
    },
  ];
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
