import { accessSync, constants, existsSync, lstatSync, readlinkSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { processChain } from "../approval/chain.js";
import { unaccountedHistory } from "../approval/chainHistory.js";
import { firstOf, quotedName, safeText } from "../catalog/text.js";
import {
  NEW_PASSPHRASE_FILE_ENV,
  PASSPHRASE_FILE_ENV,
  passphraseFileFinding,
} from "../cli/passphraseFile.js";
import { ConfigError, findConfig, loadConfigFile } from "../config/config.js";
import { readConsoleAddress } from "../console/address.js";
import { listGateways } from "../gateway/registry.js";
import { lockHolders, notPortcullisPhrase, runsPortcullisCommand } from "../identity/proc.js";
import { foreignProc, OWN_PROC_FIX } from "../identity/procRead.js";
import { loadPublicKeyring } from "../keyring/keyring.js";
import { KeyringError, KeyringExposedError } from "../keyring/keyringErrors.js";
import { keyringPath } from "../keyring/keyringRead.js";
import { leftKeyringTemps } from "../keyring/leftTemps.js";
import { missingSchema, openStore, type Store, StoreError, storeFailure } from "../store/db.js";
import { KNOWN_SCHEMA_VERSION, olderThan, portcullisVersion, schemaPhrase } from "../store/schemaVersion.js";
import { quotedLine, STORE_FILE, stateDirFlagFor, stateDirPath } from "../store/stateDir.js";
import { storeAdvice } from "../store/storeAdvice.js";
import type { StoreCause } from "../store/storeError.js";
import { closedDirectory } from "../util/errno.js";
import { xdgStateHome } from "../util/xdg.js";
import { type SecretPolicy, storedPolicies } from "../vault/secrets.js";
import { changeMarkFinding } from "./doctorChangeMark.js";
import { frontOf, listenFronts } from "./doctorFronts.js";
import { configHeaderFindings, headerFindings } from "./doctorHeaders.js";
import { entryStateDir, labelFindings } from "./doctorLabels.js";
import {
  entryListenFindings,
  entryTokenFiles,
  type NamedTokenFile,
  nearbyTokenFiles,
  tokenFileFindings,
} from "./doctorListen.js";
import { relabelFinding } from "./doctorRelabel.js";
import { unrecordedRotationFinding } from "./doctorRotation.js";
import { entryPathKey, OnboardError, readHostServers, readHostText } from "./document.js";
import {
  entryKindMeant,
  unknownEntryKeys,
  unknownKeysEffect,
  unknownKeysFix,
  unknownKeysText,
} from "./entryKeys.js";
import type { HostFile } from "./hosts.js";
import { foundHostFiles } from "./hosts.js";
import {
  isWrapped,
  LabelClash,
  mistypedLaunchKey,
  notStdio,
  planWrap,
  readRecords,
  shellWord,
  type WrapRecord,
} from "./wrap.js";

export interface Finding {
  ok: boolean;
  what: string;
  /** what to do next */
  next: string;
  /** the store's finding only: which cause it is (src/store/storeError.ts, StoreCause) */
  cause?: StoreCause;
}

export interface DoctorReport {
  stateDir: { path: string; why: "flag" | "variable" | "default"; mode: string | null };
  keyring: boolean;
  gateways: {
    label: string;
    pid: number;
    epoch: string | null;
    hostChain: string[];
    /** why its host chain cannot be read from here (another PID namespace, or cannot tell); null when it can */
    unseen: string | null;
  }[];
  /**
   * The console of this state directory: its live address and owner, or not running with the
   * command line that starts it (null when there is no state directory to run it on). Structured
   * so that a script reads fields, not a sentence; the text output says it as a sentence.
   */
  console: { running: true; url: string; pid: number } | { running: false; start: string | null };
  hosts: {
    host: string;
    file: string;
    servers: {
      key: string;
      wrapped: boolean;
      /** "stdio": wrap can put it behind portcullis; "http": a remote entry wrap leaves alone; "unusable": neither */
      kind: "stdio" | "http" | "unusable";
      /**
       * set when the entry holds a key its host does not read in one ("arg", "urll") or a "type"
       * it does not know ("stdoi"): wrap refuses it, and a finding says the rename; `kind` is
       * then what its keys say (a "stdoi" entry with a "command" is "stdio")
       */
      mistyped?: true;
      /**
       * an "http" entry whose url is a `run --listen` front of this state directory: the front's
       * label (the entry is behind portcullis through it); absent for any other entry
       */
      front?: string;
    }[];
    error?: string;
  }[];
  versions: { node: string; portcullis: string; sqlite: string | null };
  findings: Finding[];
}

/** Where the state directory comes from, without creating it (doctor looks, it does not make). */
export function stateDirSource(flag?: string): { path: string; why: "flag" | "variable" | "default" } {
  // an empty flag is refused as every command refuses it, not reported on the default directory
  if (flag !== undefined) return { path: stateDirPath(flag), why: "flag" };
  // stateDirPath: a PORTCULLIS_HOME of "~/…" that no shell expanded is refused as every command refuses it
  if (process.env.PORTCULLIS_HOME) return { path: stateDirPath(), why: "variable" };
  return { path: join(xdgStateHome(), "portcullis"), why: "default" };
}

export function doctor(flag: string | undefined, cwd: string): DoctorReport {
  const { path, why } = stateDirSource(flag);
  const findings: Finding[] = [];
  const exists = existsSync(path);
  const mode = exists ? statSync(path).mode & 0o777 : null;
  const isDir = exists && statSync(path).isDirectory();
  findings.push(...stateDirFindings(path, why, mode, isDir));
  // a gateway started from here would refuse to launch its server (run says the same sentence)
  const foreign = foreignProc();
  if (foreign)
    findings.push({
      ok: false,
      what: `a gateway started here cannot launch a server: ${foreign}`,
      next: `${OWN_PROC_FIX}: the agent host with it; a server reached by URL (run --url) needs no /proc`,
    });
  const keyring = isDir && keyringFinding(path, findings);
  if (isDir) findings.push(...leftTempFindings(path));
  // a passphrase change its command left unrecorded in the audit chain
  const changeMark = isDir && keyring ? changeMarkFinding(path) : null;
  if (changeMark) findings.push(changeMark);
  // the file the commands would read the passphrase from (only when set): refused by them when
  // another user's, or others may read or change it; said here before a command refuses it
  // (and the one `portcullis passphrase` would read the new passphrase from, checked alike)
  for (const env of [PASSPHRASE_FILE_ENV, NEW_PASSPHRASE_FILE_ENV]) {
    const passphraseFile = process.env[env];
    const unusable = passphraseFile ? passphraseFileFinding(passphraseFile, env) : null;
    if (unusable) findings.push({ ok: false, ...unusable });
  }
  findings.push(...configFindings(cwd, path));

  const sqlite = sqliteVersion();
  const gateways: DoctorReport["gateways"] = [];
  const storePath = join(path, STORE_FILE);
  const store = isDir && existsSync(storePath) ? openOrReport(path, findings) : null;
  /**
   * the vault's secrets by name, with how each may be handed out (stored in clear beside the
   * sealed values; no value is read); null when the store could not be read
   */
  let vault: ReadonlyMap<string, SecretPolicy> | null = null;
  if (isDir && !existsSync(storePath)) {
    const missing = missingStore(storePath, keyring);
    if (missing) findings.push(missing);
  }
  if (store) {
    try {
      const locked = lockedStore(store, storePath);
      if (locked) findings.push(locked);
      const missing = missingSchema(store);
      if (missing.length > 0) {
        const damaged = new StoreError(
          storePath,
          `lacks ${missing.length === 1 ? "a part" : `${missing.length} parts`} of its schema (${firstOf(missing, 6, (m) => m)}): dropped since it was made, so the commands that need ${missing.length === 1 ? "it" : "them"} fail`,
          "damaged",
        );
        findings.push({
          ok: false,
          what: damaged.message,
          next: storeAdvice(damaged),
          cause: damaged.reason,
        });
      }
      const unaccounted = unaccountedHistory(store);
      if (unaccounted)
        findings.push({
          ok: false,
          what: `audit chain in ${path}: ${unaccounted}`,
          // each command last or on its own, in no quotes of the sentence's own: it pastes whole
          next: `restore the state directory from a backup, or start over in a new one with portcullis init (a key pinned in this chain now would be anyone's); to see what is wrong, run: portcullis audit verify --state-dir ${shellWord(path)}`,
        });
      // a key rotation its command left unrecorded in the audit chain
      const rotation = unrecordedRotationFinding(store, path);
      if (rotation) findings.push(rotation);
      vault = secretPolicies(store);
      for (const g of listGateways(store)) {
        // Only a gateway seen here has its pid here: another namespace's pid is another process.
        const chain = g.liveness === "alive" ? processChain(g.pid).slice(1) : [];
        gateways.push({
          label: g.serverLabel,
          pid: g.pid,
          epoch: g.epoch,
          hostChain: chain.map((c) => `${c.pid} ${c.command || c.executable || "?"}`),
          unseen: g.unseen,
        });
        // still running from before an upgrade (store/schemaVersion.ts): it goes on as that
        // version did (an approval it cannot verify is refused: approval/olderGateway.ts)
        if (g.running && olderThan(g.schemaVersion, KNOWN_SCHEMA_VERSION))
          findings.push({
            ok: false,
            what: `gateway "${g.serverLabel}" (pid ${g.pid}) was started by an older portcullis (${schemaPhrase(g.schemaVersion)}; this one, ${portcullisVersion()}, knows ${KNOWN_SCHEMA_VERSION}) and runs that version's code`,
            // a row names any pid its writer chose: one that is not a gateway is not to be ended
            next: runsPortcullisCommand(g.pid, "run")
              ? `restart it so that it runs this portcullis: restart the MCP client that started it (or end it: kill ${g.pid})`
              : `its row's ${notPortcullisPhrase(g.pid, "gateway")}; restart the MCP client that started the gateway "${g.serverLabel}" so that it runs this portcullis`,
          });
      }
    } finally {
      store.close();
    }
  }

  const hosts: DoctorReport["hosts"] = [];
  /** the bearer token files `run --listen` would read, from the host entries and portcullis.json */
  const tokenFiles: NamedTokenFile[] = [];
  const recorded = new Map((isDir ? safeRecords(path) : []).map((r) => [r.file, r]));
  const fronts = listenFronts(path, cwd);
  for (const f of foundHostFiles(cwd)) {
    // What the host file says is one question (a file the host cannot read either: the user's
    // to fix); what doctor makes of it is another: an error there is portcullis's own, and was
    // once told as a broken host file, sending the user to fix a file that was fine.
    let read: ReturnType<typeof readHostServers>;
    try {
      read = readHostServers(f, readHostText(f.file));
    } catch (e) {
      const msg = e instanceof OnboardError ? e.message.replace(/; nothing was written\.$/, "") : String(e);
      hosts.push({ host: f.host, file: f.file, servers: [], error: msg });
      findings.push({ ok: false, what: msg, next: `fix ${f.file} (the host cannot read it either)` });
      continue;
    }
    try {
      const record = recorded.get(f.file);
      const list = read.servers.map((s) => {
        const given = serverKind(s.entry);
        // listed as what its keys say, as the finding below takes it (a "stdoi" entry with a
        // "command" is a stdio one, not "http"), and marked when it holds a mistyped key or type
        const kind = listedKind(f, s.entry, given);
        const mistyped = given !== "unusable" && unknownEntryKeys(f, s.entry, given).length > 0;
        // listed as behind portcullis, as the finding below says it: not as a bare "http"
        const front = kind === "http" ? frontOf(s.entry, fronts) : null;
        return {
          key: s.key,
          wrapped: isWrapped(s.entry),
          kind,
          ...(mistyped ? { mistyped: true as const } : {}),
          ...(front !== null ? { front } : {}),
          recorded: record?.entries[entryPathKey(s.table, s.key)] !== undefined,
        };
      });
      hosts.push({ host: f.host, file: f.file, servers: list.map(({ recorded: _, ...s }) => s) });
      // only what wrap would take: an HTTP entry is not something 'wrap' can put behind portcullis
      // an entry holding a key its host does not read is left out: wrap refuses it, and its own
      // finding (below) says the rename to make first, so the command given works as given
      const bare = list
        .filter(
          (s, i) =>
            !s.wrapped && s.kind === "stdio" && unknownEntryKeys(f, read.servers[i]!.entry).length === 0,
        )
        .map((s) => s.key);
      if (bare.length > 0) {
        const advice = wrapAdvice(f, bare, record !== undefined, path);
        findings.push({
          ok: true,
          what: `${f.file}: not behind portcullis: ${bare.join(", ")}${advice.why}`,
          next: advice.command,
        });
      }
      // an HTTP entry that reaches a --listen front of this state directory is behind portcullis
      const atFront = read.servers
        .map((s) => ({ key: s.key, label: frontOf(s.entry, fronts) }))
        .filter((s): s is { key: string; label: string } => s.label !== null);
      if (atFront.length > 0)
        findings.push({
          ok: true,
          what: `${f.file}: behind portcullis's --listen front: ${atFront.map((s) => (s.key === s.label ? s.key : `${s.key} (label ${quotedName(s.label)})`)).join(", ")}`,
          next: "nothing",
        });
      const behindFront = new Set(atFront.map((s) => s.key));
      // (an HTTP entry holding a key its host does not read is left out, as from the wrap
      // advice: its own finding says the rename to make before guarding it)
      const remote = list
        .filter(
          (s, i) =>
            !s.wrapped &&
            s.kind === "http" &&
            !behindFront.has(s.key) &&
            unknownEntryKeys(f, read.servers[i]!.entry, "http").length === 0,
        )
        .map((s) => s.key);
      if (remote.length > 0)
        findings.push({
          ok: true,
          what: `${f.file}: not stdio servers, which wrap leaves alone: ${remote.join(", ")}`,
          next: urlEntryAdvice(path),
        });
      const unusable = read.servers.filter((s) => serverKind(s.entry) === "unusable");
      for (const s of unusable)
        findings.push({
          ok: true,
          what: `${f.file}: "${s.key}" is not a server the host can start (${notStdio(s.entry)})`,
          next: unusableNext(s.entry),
        });
      // a key the host does not read ("arg" for "args", "header" for an HTTP entry's "headers")
      // or a "type" it does not know ("htpp"): the server runs without it, and wrap refuses it
      for (const s of read.servers) {
        const given = serverKind(s.entry);
        if (given === "unusable") continue;
        const unknown = unknownEntryKeys(f, s.entry, given);
        if (unknown.length === 0) continue;
        const kind = entryKindMeant(f, s.entry, given);
        findings.push({
          ok: false,
          what: `${f.file}: "${s.key}" has ${unknownKeysText(unknown)}, ${unknownKeysEffect(f, unknown, kind, true)}`,
          next: unknownKeysFix(unknown),
        });
      }
      // a label wrap chose because the store's history under the entry's own was another server's
      for (const s of read.servers) {
        const relabelled = relabelFinding(f, s.key, record?.entries[entryPathKey(s.table, s.key)], path);
        if (relabelled !== null && isWrapped(s.entry)) findings.push(relabelled);
      }
      const unrecorded = read.servers.filter((_, i) => list[i]!.wrapped && !list[i]!.recorded);
      if (unrecorded.length > 0) {
        // the state directories those entries name (wrap writes --state-dir DIR into each): the
        // one to give doctor and unwrap, where their record and their gateways are
        const elsewhere = [
          ...new Set(
            unrecorded.map((s) => entryStateDir(s.entry)).filter((d) => d !== undefined && d !== path),
          ),
        ] as string[];
        findings.push({
          ok: true,
          what: `${f.file} has wrapped servers with no wrap record in ${path}: ${unrecorded.map((s) => s.key).join(", ")}${elsewhere.length > 0 ? ` (they name the state director${elsewhere.length === 1 ? "y" : "ies"} ${elsewhere.join(", ")})` : ""}`,
          next:
            elsewhere.length > 0
              ? `their record, vault and gateways are in the state directory they name; run doctor there: ${elsewhere.map((d) => `portcullis doctor --state-dir ${shellWord(d)}`).join(", or ")}`
              : "wrapped by hand or with another state directory; 'portcullis unwrap' cannot restore them from here",
        });
      }
      // an entry that runs a portcullis.json label: that the label resolves, and no credential
      // the vault holds for it left in clear in the entry's env
      for (const s of read.servers) {
        findings.push(...labelFindings(f, s.key, s.entry, cwd, { stateDir: path, secrets: vault }));
        // and no credential header written out in clear (its value stays unread and unprinted);
        // not a front's own bearer token, which the host must send it
        if (!behindFront.has(s.key)) findings.push(...headerFindings(f, s.key, s.entry, path));
        // an HTTP front's option with no address to listen on: run refuses it at every start
        findings.push(...entryListenFindings(f, s.key, s.entry, cwd));
        tokenFiles.push(...entryTokenFiles(f, s.key, s.entry, cwd));
      }
    } catch (e) {
      // (the file was read: its servers may already be listed; the finding says what failed)
      findings.push({
        ok: false,
        what: `${f.file} was read, but doctor could not finish checking it: ${e instanceof Error ? e.message : String(e)}`,
        next: "this is a fault in portcullis, not in the file: please report it with this line; the file's other checks were not made",
      });
    }
  }
  findings.push(...tokenFileFindings([...tokenFiles, ...nearbyTokenFiles(cwd)]));
  const pkg = createRequire(import.meta.url)("../../package.json") as { version: string };
  return {
    stateDir: { path, why, mode: mode === null ? null : mode.toString(8) },
    keyring,
    gateways,
    console: consoleState(isDir ? path : null),
    hosts,
    versions: { node: process.versions.node, portcullis: pkg.version, sqlite },
    // Each sentence quotes paths and names that are not portcullis's own (a directory's name may
    // hold a newline, an ESC or a bidi override): escaped once here, so that --json's sentences
    // read as the text report's do, whichever check wrote them. The report's other fields keep
    // the paths as they are (the JSON escapes them for the terminal, src/util/printableJson.ts).
    findings: findings.map((f) => ({ ...f, what: safeText(f.what), next: safeText(f.next) })),
  };
}

/**
 * The state directory's mode as it is, and what is wrong with it: others may read it (it holds
 * the store and the keyring), or gateways cannot write it (the owner lacks write or search
 * permission, or this user is not let in), and then nothing is recorded.
 */
function stateDirFindings(path: string, why: string, mode: number | null, isDir: boolean): Finding[] {
  if (mode === null)
    return [
      {
        ok: false,
        what: `state directory ${path} does not exist`,
        // named: a bare 'portcullis init' makes the default directory, not one given by --state-dir
        next: `give the --state-dir or PORTCULLIS_HOME your gateways use, or set this one up: portcullis init --state-dir ${shellWord(path)}`,
      },
    ];
  // A file in the directory's place: nothing inside it can be looked at.
  if (!isDir)
    return [
      {
        ok: false,
        what: `state directory ${path} is not a directory`,
        next: "move that file aside, or give the state directory in use with --state-dir or PORTCULLIS_HOME",
      },
    ];
  const m = mode.toString(8).padStart(3, "0");
  const out: Finding[] = [];
  if ((mode & 0o077) !== 0)
    out.push({
      ok: false,
      what: `state directory ${path} is readable by others (mode ${m})`,
      next: `chmod 700 ${shellWord(path)}`,
    });
  if ((mode & 0o700) !== 0o700)
    out.push({
      ok: false,
      what: `state directory ${path} is not writable by its owner (mode ${m}): gateways cannot write the store or the audit log there`,
      next: `chmod 700 ${shellWord(path)}`,
    });
  else if (!canWrite(path))
    out.push({
      ok: false,
      what: `state directory ${path} (mode ${m}) cannot be written by this user: gateways run by it cannot write the store or the audit log there`,
      next: "run as the directory's owner, or give a state directory of your own (--state-dir or PORTCULLIS_HOME)",
    });
  if (out.length === 0)
    out.push({ ok: true, what: `state directory ${path} (mode ${m}, from the ${why})`, next: "nothing" });
  return out;
}

function canWrite(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The store, or null with a finding saying what is wrong with it (damaged, not a store, newer
 * than this portcullis, read-only, disk full): doctor is where a broken store gets explained.
 */
function openOrReport(stateDir: string, findings: Finding[]): Store | null {
  try {
    return openStore(stateDir);
  } catch (e) {
    if (!(e instanceof StoreError)) throw e;
    findings.push({
      ok: false,
      what: e.message.replace(/\.$/, ""),
      next: storeAdvice(e),
      cause: e.reason,
    });
    return null;
  }
}

/**
 * The portcullis.json found from `cwd` (what `run LABEL` and `drill` read here): when it does not
 * load, `run LABEL` refuses it with the same sentence, so a host entry that runs a label from here
 * cannot start; when it loads, the credentials its servers' "headers" hold in clear (as those of
 * a host file are reported). None when there is none, or it loads and holds none.
 */
function configFindings(cwd: string, stateDir: string): Finding[] {
  let file: string | null;
  try {
    file = findConfig(cwd);
    if (file === null) return [];
    return [...loadConfigFile(file).values()].flatMap((server) =>
      configHeaderFindings(file!, server, stateDir),
    );
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return [
      {
        ok: false,
        what: e.message.replace(/\.$/, ""),
        next: "fix the file (docs/configuration.md says each key): 'portcullis run LABEL' and 'portcullis drill' refuse it with this sentence until then",
      },
    ];
  }
}

/** How long doctor waits for the store's write lock before it asks who holds it. */
const LOCK_PROBE_MS = 2_000;

/**
 * A store that opens may still be locked by another process (a database browser with an unsaved
 * edit, an sqlite3 shell inside BEGIN): opening it needs no write, so it read as healthy while
 * every gateway's write waited and failed. Asked by taking the write lock and giving it back at
 * once, waiting at most 2 s. A lock held longer is not always a problem: a gateway of this store
 * may be in a long write (a large catalog, a slow disk), which other gateways wait out (their
 * busy timeout, 10 s). So who holds it is asked (Linux: the write lock's holder in /proc/locks,
 * src/identity/procLocks.ts): a running gateway of this store, or a lock let go by the time it is
 * asked, is `busy` (said, not a failure: run doctor again); another process, or one that cannot
 * be named and still holds it, is `locked`.
 */
function lockedStore(store: Store, storePath: string): Finding | null {
  const before = store.pragma("busy_timeout", { simple: true }) as number;
  const free = (ms: number): unknown => {
    store.pragma(`busy_timeout = ${ms}`);
    try {
      store.exec("BEGIN IMMEDIATE");
      store.exec("ROLLBACK");
      return null;
    } catch (e) {
      return e;
    }
  };
  try {
    const e = free(LOCK_PROBE_MS);
    if (e === null) return null;
    const failure = storeFailure(e);
    if (!failure) throw e;
    if (failure.reason !== "locked")
      return {
        ok: false,
        what: failure.message.replace(/\.$/, ""),
        next: storeAdvice(failure),
        cause: failure.reason,
      };
    const holders = lockHolders(storePath);
    const gateways = new Set(listGateways(store).map((g) => g.pid));
    const ofGateways = holders.length > 0 && holders.every((pid) => gateways.has(pid));
    if (ofGateways || (holders.length === 0 && free(0) === null)) {
      const who = ofGateways
        ? `a gateway of this store (${holders.map((pid) => `pid ${pid}`).join(", ")}) holds its write lock`
        : "another process held its write lock and has let go since";
      return {
        ok: true,
        what: `the store ${storePath} is busy: ${who}, longer than doctor's ${LOCK_PROBE_MS / 1000} s wait (a long write, which other gateways wait out)`,
        next: storeAdvice(new StoreError(storePath, "is busy.", "busy")),
        cause: "busy",
      };
    }
    const problem = new StoreError(
      storePath,
      "is locked by another process: gateways cannot record calls or decisions until it lets go.",
      "locked",
    );
    return {
      ok: false,
      what: problem.message.replace(/\.$/, ""),
      next: storeAdvice(problem),
      cause: problem.reason,
    };
  } finally {
    store.pragma(`busy_timeout = ${before}`);
  }
}

/**
 * No store where the state directory keeps it. A link to a file that is gone is a store that
 * cannot be opened (a command would make a new one at the link's target, a new audit log). A
 * keyring without a store is a state directory set up by an earlier portcullis (its init made the
 * store at the first gateway), or one whose store was lost: not a problem to report, but said,
 * since a new store starts a new audit log. No keyring: its own finding says to run init.
 */
function missingStore(storePath: string, keyring: boolean): Finding | null {
  let target: string | null = null;
  try {
    if (lstatSync(storePath).isSymbolicLink()) target = readlinkSync(storePath);
  } catch {
    // not there at all
  }
  if (target !== null)
    return {
      ok: false,
      what: `the store ${storePath} is a symbolic link to ${target}, which does not exist`,
      next: `put the store back at ${target} (from where it was moved, or a backup); only without one, remove the link (rm ${storePath}): the next command then starts a new, empty store and audit log`,
      cause: "missing",
    };
  if (!keyring) return null;
  return {
    ok: true,
    what: `no store in ${dirname(storePath)} yet (${STORE_FILE})`,
    next: `nothing: the next gateway or command creates it; if there was one (a state directory restored without it), put it back first, since a new store starts a new audit log`,
    cause: "missing",
  };
}

/**
 * Whether the keyring is there and its public half reads as a keyring (what every gateway needs:
 * a file that exists but cannot be parsed stops `run` just the same). The passphrase-protected
 * half is not opened: doctor asks for nothing.
 */
function keyringFinding(stateDir: string, findings: Finding[]): boolean {
  try {
    if (loadPublicKeyring(stateDir) === null) {
      findings.push({
        ok: false,
        what: `no keyring in ${stateDir}`,
        next: `portcullis init --state-dir ${shellWord(stateDir)}`,
      });
      return false;
    }
  } catch (e) {
    if (!(e instanceof KeyringError)) throw e;
    const path = keyringPath(stateDir);
    const closed = closedDirectory(path);
    findings.push({
      ok: false,
      what: e instanceof KeyringExposedError ? e.problem : e.message,
      // one this user may not read is not damaged: restoring it from a backup was wrong advice;
      // and when a directory on its way is what refuses, that directory's owner is the one
      // one others may read, which this user cannot make 0600, says what makes it usable itself
      next:
        e instanceof KeyringExposedError
          ? e.fix
          : closed
            ? `run portcullis as the user ${closed.dir} belongs to (ls -ld ${shellWord(closed.dir)} shows who), or give a state directory of your own: nothing says the keyring in it is damaged`
            : mayNotRead(path)
              ? `run portcullis as the user ${path} belongs to (ls -l ${shellWord(path)} shows who): a keyring is for its owner's eyes only, and nothing says this one is damaged`
              : `restore ${path} from a backup (a new keyring cannot read the audit log sealed to this one; to start over, move the state directory aside and run 'portcullis init')`,
    });
    return false;
  }
  findings.push({ ok: true, what: "keyring exists and reads as a keyring", next: "nothing" });
  return true;
}

/**
 * A temporary file of a rewrite of keyring.json whose process was killed before its rename: a
 * copy of the keyring's keys sealed under the passphrase that rewrite was given (the new one of a
 * killed `portcullis passphrase`, which then never took effect), that nothing reads and that stays
 * until the next rewrite takes the keyring's lock. Doctor removes nothing: it says so.
 */
function leftTempFindings(stateDir: string): Finding[] {
  return leftKeyringTemps(stateDir).map((file) => ({
    ok: false,
    what: `${file} was left by a rewrite of the keyring killed before it finished: it holds the keyring's keys, sealed under the passphrase that rewrite was given, and nothing reads it`,
    next: `remove it: rm ${shellWord(file)} (keyring.json is whole without it; the next 'portcullis passphrase' removes it too)`,
  }));
}

/** Whether opening `path` to read is refused to this user (EACCES, EPERM), as opposed to absent or damaged. */
function mayNotRead(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return false;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === "EACCES" || code === "EPERM";
  }
}

/** The console's live address (its owner process checked), or that it is not running and what starts it. */
function consoleState(stateDir: string | null): DoctorReport["console"] {
  // no state directory (missing, or not one): 'portcullis console' would start on the default
  // one, or fail on this one; the findings say what to set up first
  if (stateDir === null) return { running: false, start: null };
  const live = readConsoleAddress(stateDir);
  return live
    ? { running: true, url: live.url, pid: live.pid }
    : { running: false, start: `portcullis console${stateDirFlagFor(stateDir)}` };
}

/** doctor's console line, as the text output says it. */
export function consoleLine(state: DoctorReport["console"]): string {
  if (state.running) return `${state.url} (pid ${state.pid})`;
  if (state.start === null) return "not running (no state directory to run on: see the findings)";
  return `not running (${quotedLine(state.start)} starts it)`;
}

/** The SQLite library the store uses, asked of an in-memory database (no state needed). */
function sqliteVersion(): string | null {
  try {
    const db = new Database(":memory:");
    try {
      return (db.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v;
    } finally {
      db.close();
    }
  } catch {
    return null;
  }
}

/** What to do for an entry the host cannot start: rename the key that is "command" or "url" mistyped, when one is. */
function unusableNext(e: Record<string, unknown>): string {
  const typo = e.command === undefined ? mistypedLaunchKey(e) : null;
  if (typo) return `rename ${quotedName(typo.key)} to "${typo.meant}", or remove the entry`;
  return `give it a "command" (a string) or a "url", or remove it`;
}

type ServerKind = "stdio" | "http" | "unusable";

function serverKind(e: Record<string, unknown>): ServerKind {
  const why = notStdio(e);
  return why === null ? "stdio" : why.startsWith("an HTTP entry") ? "http" : "unusable";
}

/**
 * The kind an entry is listed as: what its keys say, with a mistyped "type" read as the value it
 * stands for (entryKindMeant). notStdio takes any "type" other than "stdio" for an HTTP entry, so
 * `"type": "stdoi"` beside a "command" was listed `http` while its finding and wrap's refusal
 * treated it as the stdio entry it is; one with no "command" either is listed `unusable`.
 */
function listedKind(host: HostFile, e: Record<string, unknown>, given: ServerKind): ServerKind {
  if (given === "unusable" || entryKindMeant(host, e, given) !== "stdio" || given === "stdio") return given;
  return serverKind({ ...e, type: "stdio" });
}

/**
 * What to run to put a file's bare servers behind portcullis, from this directory (the host's
 * files are this project's, and in ~/.claude.json this project's table and the user's). Wrap
 * leaves what is wrapped already as it is, so a file wrapped in part takes the rest by name; a
 * file never wrapped gets the dry run first. A server whose label another server already has gets
 * the --label wrap would ask for, so that the command given works as given, and `why` (for the
 * finding's `what`) says whose label it is: a --label in the command with no word of why read as
 * if doctor renamed a server at random.
 */
/**
 * How to put an HTTP entry behind portcullis by hand: the command entry wrap would write for it,
 * with node, the CLI and the state directory by absolute path. A host starts it with its own
 * environment (no PORTCULLIS_HOME, often no PATH): without `--state-dir` the gateway used
 * another state directory than this one, whose keyring, vault and approvals are not these.
 * The entry's "url" is not printed (a host file's URL may carry a token in its query).
 */
function urlEntryAdvice(stateDir: string): string {
  const cli = fileURLToPath(new URL("../cli/main.cjs", import.meta.url));
  const args = [cli, "run", "--state-dir", resolve(stateDir), "--label", "LABEL", "--url", "URL"];
  const entry = `{"command": ${JSON.stringify(process.execPath)}, "args": ${JSON.stringify(args)}}`;
  return `to guard one, replace its entry by hand with ${entry}, URL its "url" and LABEL a name for it (a header it needs from the vault: "--header-secret", "Authorization: Bearer {}=NAME" after "URL", NAME a secret stored with vault set --host; docs/onboarding.md, HTTP entries)`;
}

function wrapAdvice(
  f: HostFile,
  bare: string[],
  wrappedBefore: boolean,
  stateDir: string,
): { command: string; why: string } {
  // named unless it is the default, as the console and vault set advice name it: the wrap is
  // pasted into a shell that may lack this one's $PORTCULLIS_HOME, and would wrap the servers
  // into another state directory than the one this report is about
  const dir = stateDirFlagFor(stateDir);
  const clashes = labelsNeeded(f, bare, stateDir);
  const label = clashes.map((c) => ` --label ${shellWord(`${c.key}=${c.suggestion}`)}`).join("");
  const why = clashes
    .map(
      (c) =>
        `; ${quotedName(c.key)} is given the label ${quotedName(c.suggestion)}: its own, ${quotedName(c.label)}, is another server's already (${c.holder})`,
    )
    .join("");
  if (!wrappedBefore && clashes.length === 0)
    return { command: `portcullis wrap ${f.host} --dry-run${dir}`, why };
  return { command: `portcullis wrap ${f.host} --servers ${shellWord(bare.join(","))}${label}${dir}`, why };
}

/** The --label each bare server needs for wrap to take it (none when its own label is free), with the clash that asks for it. */
function labelsNeeded(f: HostFile, bare: string[], stateDir: string): LabelClash[] {
  const launcher = {
    node: process.execPath,
    cli: fileURLToPath(new URL("../cli/main.cjs", import.meta.url)),
    stateDir,
  };
  const labels = new Map<string, string>();
  const clashes: LabelClash[] = [];
  for (let i = 0; i <= bare.length; i++) {
    try {
      planWrap(f, launcher, { only: bare, labels });
      break;
    } catch (e) {
      if (!(e instanceof LabelClash) || labels.has(e.key)) break;
      labels.set(e.key, e.suggestion);
      clashes.push(e);
    }
  }
  return clashes;
}

/** The vault's secrets' names and policies, or null when the store has no vault table it can read. */
function secretPolicies(store: Store): ReadonlyMap<string, SecretPolicy> | null {
  try {
    return storedPolicies(store);
  } catch {
    return null;
  }
}

function safeRecords(stateDir: string): WrapRecord[] {
  try {
    return readRecords(stateDir);
  } catch {
    return [];
  }
}
