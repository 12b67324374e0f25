// One capture's digest work: single files, a dependency tree, glob-selected inputs. Everything that
// the cache cannot answer is queued and hashed in one batch (with worker threads when it is large).
import { createHash, type Hash } from "node:crypto";
import { type Dirent, lstatSync, readdirSync, readlinkSync, type Stats, statSync } from "node:fs";
import { sha256Hex } from "../util/canonical.js";
import { type SeenFile, stateKey } from "./asCaptured.js";
import {
  type DigestCache,
  type DirEntry,
  KIND_DIR,
  KIND_FILE,
  KIND_LINK,
  KIND_OTHER,
  type TreeListings,
} from "./cache.js";
import { type HashOutcome, HashPool, POOL_MIN_FILES } from "./hash.js";
import { inStateDirReal } from "./include.js";
import type { IncludeMatch } from "./includeMatch.js";
import { pathsTo } from "./pathsTo.js";

export interface Slot {
  sha?: string;
  error?: string;
}

export interface TreeDigest {
  files: number;
  sha256: string;
  /** the walk stopped at its `limit`: the digest covers only part of the tree */
  over?: true;
}

export interface TreeOptions {
  /** called with each symlink met by the walk (the link's path), to follow it elsewhere */
  onLink?: (abs: string) => void;
  /** stop after this many lines (0: no bound) */
  limit?: number;
  /**
   * keep what the walk saw of every file, link and directory in `DigestJob.seen` (a linked
   * package: the developer's own code, bounded by MAX_LINKED_FILES). Not for node_modules: the
   * second stat of each of its files, once the watcher is set up, would double the warm start's
   * walk (docs/identity.md, Limits).
   */
  keepSeen?: boolean;
}

/** Marker digests for entries that have no readable content. */
const UNREADABLE = sha256Hex("portcullis:unreadable");
const LINK_KEY = "\0link";

export function linkDigest(target: string): string {
  return sha256Hex(`symlink\0${target}`);
}

interface TreeState {
  root: string;
  /** hash every file, never taking a digest from the cache (see DigestJob.file) */
  fresh: boolean;
  /** the cached directory listings of this tree (none for a glob's files) */
  listings: TreeListings | null;
  listingChanged: boolean;
  gen: number;
  result: TreeDigest | null;
  /** Lines are produced in their final (sorted) order. Until the first one whose digest must wait
   * for the hasher, they go straight into the hash; from then on they are buffered. */
  hash: Hash;
  chunk: string;
  streamed: number;
  buffering: boolean;
  rels: string[];
  shas: (string | null)[];
  onLink: ((abs: string) => void) | null;
  limit: number;
  over: boolean;
  /** the files hashed are kept in `DigestJob.seen` (fresh ones, and a tree's with keepSeen) */
  keepSeen: boolean;
}

function treeState(
  root: string,
  gen: number,
  listings: TreeListings | null,
  fresh = false,
  opts: TreeOptions = {},
): TreeState {
  return {
    root,
    fresh,
    listings,
    listingChanged: false,
    gen,
    result: null,
    hash: createHash("sha256"),
    chunk: "",
    streamed: 0,
    buffering: false,
    rels: [],
    shas: [],
    onLink: opts.onLink ?? null,
    limit: opts.limit ?? 0,
    over: false,
    keepSeen: fresh || opts.keepSeen === true,
  };
}

/** Whether a bounded walk has all the lines it may take; marks it cut short. */
function full(t: TreeState): boolean {
  if (t.limit === 0 || t.streamed + t.rels.length < t.limit) return false;
  t.over = true;
  return true;
}

/** A line whose digest is known now. */
function known(t: TreeState, rel: string, sha: string): void {
  if (t.buffering) {
    t.rels.push(rel);
    t.shas.push(sha);
    return;
  }
  t.chunk += `${rel}\0${sha}\n`;
  t.streamed++;
  if (t.chunk.length > 65536) {
    t.hash.update(t.chunk);
    t.chunk = "";
  }
}

/** A line whose digest the hasher will provide; returns its slot. */
function pending(t: TreeState, rel: string): number {
  t.buffering = true;
  t.rels.push(rel);
  t.shas.push(null);
  return t.shas.length - 1;
}

export class DigestJob {
  private readonly paths: string[] = [];
  private readonly follow: number[] = [];
  private readonly keys: (string | null)[] = [];
  /** per queued path: 1 when its status change says nothing about the server (see alsoWarm) */
  private readonly unprobed: number[] = [];
  private readonly sinks: ((o: HashOutcome) => void)[] = [];
  private readonly trees: TreeState[] = [];
  private readonly pool = new HashPool();
  private early: { count: number; outcomes: Promise<HashOutcome[]> } | null = null;
  /**
   * The first path seen with a status change (ctime) at or after `changedSince`: set when the
   * server was started before this capture, and something it may have loaded changed since.
   */
  touched: string | null = null;
  /**
   * What this job saw of each file it digests fresh or as a single file (the server's own code,
   * the executable, the include patterns' files) and of every file, link and directory of a tree
   * walked with `keepSeen` (the linked packages): the state of the bytes it hashed, and for a
   * directory the names it listed, for the check once the watcher is set up (asCaptured.ts).
   * node_modules is not in it.
   */
  readonly seen = new Map<string, SeenFile>();

  constructor(
    readonly cache: DigestCache,
    readonly nowMs: number = Date.now(),
    /** a time (ms since the epoch) after which no digested file may have changed; null: no check */
    readonly changedSince: number | null = null,
  ) {}

  private note(abs: string, ctimeMs: number): void {
    if (this.changedSince !== null && this.touched === null && ctimeMs >= this.changedSince)
      this.touched = abs;
  }

  /**
   * A single file, symlinks followed. The slot is filled now (cache hit) or by run(). `fresh`:
   * hashed whatever the cache says. The cache is a file any process of the user can write, with
   * no secret to authenticate it, so an entry for a changed file's new (size, mtime, ctime,
   * inode) carrying the old digest would pass for the old code. The few files that are the
   * server's own code are read every time; the result still goes into the cache, which
   * overwrites such an entry.
   */
  file(abs: string, fresh = false): Slot {
    const slot: Slot = {};
    let st: Stats;
    try {
      st = statSync(abs);
    } catch (e) {
      slot.error = (e as NodeJS.ErrnoException).code ?? "EIO";
      return slot;
    }
    this.note(abs, st.ctimeMs);
    // statSync follows links: a link on the way pointed elsewhere since the launch (`current ->
    // releases/v2` swapped atomically) changes no ctime it reads, only the new link's own. And the
    // file is hashed later than it is stat'ed (the pool): a link swapped in between would have
    // the bytes of another file digested under this one's stat. So, with a probe, the links seen
    // now must be the links then, and the file hashed the file stat'ed (linksSeen, below).
    const links = this.changedSince === null ? null : this.linksSeen(abs);
    if (!st.isFile()) {
      slot.error = st.isDirectory() ? "EISDIR" : "ENOTREG";
      return slot;
    }
    const hit = fresh ? undefined : this.cache.lookupFile(abs, st);
    if (hit !== undefined) {
      slot.sha = hit.sha;
      this.seen.set(abs, { follow: true, state: stateKey(st) });
      return slot;
    }
    this.enqueue(abs, abs, true, (o) => {
      if ("error" in o) slot.error = o.error;
      else {
        slot.sha = o.sha;
        this.seen.set(abs, { follow: true, state: stateKey(o) });
        if (links !== null && this.touched === null) {
          if (o.ino !== st.ino) this.touched = abs;
          else this.touched = this.linkChanged(links);
        }
      }
    });
    return slot;
  }

  /** The symlinks met on the way to `abs` and their state now, each noted (its ctime) as a change. */
  private linksSeen(abs: string): [string, string][] {
    const out: [string, string][] = [];
    for (const link of pathsTo(abs).slice(1, -1)) {
      try {
        const l = lstatSync(link);
        this.note(link, l.ctimeMs);
        out.push([link, stateKey(l)]);
      } catch {
        out.push([link, "gone"]);
      }
    }
    return out;
  }

  /** The first link of `seen` that is not what it was (replaced, removed), or null. */
  private linkChanged(seen: [string, string][]): string | null {
    for (const [link, state] of seen) {
      let now: string;
      try {
        now = stateKey(lstatSync(link));
      } catch {
        now = "gone";
      }
      if (now !== state) return link;
    }
    return null;
  }

  /**
   * A file digested only to fill the cache for someone else (the client's executables, whose
   * digests the agent run records): hashed with this job's workers, never part of the identity,
   * and never a reason to call the server's start racy. Skipped when cached, queued already, or
   * not a readable regular file.
   */
  alsoWarm(abs: string): void {
    let st: Stats;
    try {
      st = statSync(abs);
    } catch {
      return;
    }
    if (!st.isFile() || this.cache.lookupFile(abs, st) !== undefined) return;
    for (let i = 0; i < this.paths.length; i++) if (this.keys[i] === abs) return;
    this.enqueue(abs, abs, true, () => {}, true);
  }

  /**
   * Every regular file under `root` by content, symlinks as their target text (never followed
   * here: `opts.onLink` is told of each, and may digest where it leads as another tree), other
   * file types skipped. `skipTop` names entries of the root itself that are left out.
   */
  tree(root: string, skipTop: ReadonlySet<string> = new Set(), opts: TreeOptions = {}): () => TreeDigest {
    const cache = this.cache;
    const listings = cache.listings(root);
    const t = treeState(root, ++cache.gen, listings, false, opts);
    this.trees.push(t);
    // No listing of this root in the cache: this is a cold walk. Start workers now, and give them
    // the single files queued so far (the executable can be 100 MB) to hash during the walk.
    if (!listings.dirs.has(root)) {
      this.pool.start();
      if (this.pool.started && this.early === null && this.paths.length > 0) {
        const n = this.paths.length;
        this.early = {
          count: n,
          outcomes: this.pool.run(this.paths.slice(0, n), Uint8Array.from(this.follow), true),
        };
      }
    }
    // The root as the directory it is (statSync): a node_modules that is a symlink (to a shared
    // or mounted install) is listed through the link, and its listing must be keyed by that
    // directory's state. The link's own never changes when a package is added, so a warm capture
    // would keep the first listing of the root for good and leave every package added since out.
    let rootStat: Stats;
    try {
      rootStat = statSync(root);
    } catch {
      return () => this.finishTree(t);
    }
    this.walk(t, listings, root, "", rootStat, skipTop);
    return () => this.finishTree(t);
  }

  /**
   * The files of identity include patterns (includeMatch.ts), as `relpath\0sha` lines like a
   * tree, each hashed fresh like `file(abs, true)`: they are code the user named as the server's.
   * A link to a regular file is digested by its target's content, as the entry is: what the
   * server loads through it. A link to nothing (or to no regular file) is digested by its text.
   */
  includes(matches: readonly IncludeMatch[]): () => TreeDigest {
    const t = treeState("", 0, null, true);
    for (const m of matches) {
      if (m.kind === "file") this.addLoose(t, m.abs, m.rel);
      else if (m.kind === "link") this.addFollowed(t, m.abs, m.rel);
      else this.addLinkText(t, m.abs, m.rel);
    }
    this.trees.push(t);
    return () => this.finishTree(t);
  }

  /** A symlink to a regular file, by the target's content (hashed fresh, through the link). */
  private addFollowed(t: TreeState, abs: string, rel: string): void {
    let st: Stats;
    try {
      st = statSync(abs);
    } catch {
      this.addLinkText(t, abs, rel); // its target went away since the match
      return;
    }
    this.note(abs, st.ctimeMs);
    if (!st.isFile()) {
      this.addLinkText(t, abs, rel);
      return;
    }
    const line = pending(t, rel);
    this.enqueue(abs, abs, true, (o) => {
      if (!("error" in o)) {
        t.shas[line] = o.sha;
        this.seen.set(abs, { follow: true, state: stateKey(o) });
      } else t.shas[line] = this.onTreeError(abs, o.error);
    });
  }

  /** A symlink whose target is no regular file: its text, so pointing it elsewhere is a change. */
  private addLinkText(t: TreeState, abs: string, rel: string): void {
    try {
      const l = lstatSync(abs);
      this.note(abs, l.ctimeMs);
      known(t, rel, linkDigest(readlinkSync(abs)));
      this.seen.set(abs, { follow: false, state: stateKey(l) });
    } catch {
      /* gone since the match */
    }
  }

  /** Hashes everything queued, then releases the workers. */
  async run(): Promise<void> {
    try {
      const n = this.paths.length;
      if (n === 0) return;
      const from = this.early?.count ?? 0;
      if (n - from >= POOL_MIN_FILES) this.pool.start();
      const rest =
        n > from ? await this.pool.run(this.paths.slice(from), Uint8Array.from(this.follow.slice(from))) : [];
      const head = this.early === null ? [] : await this.early.outcomes;
      const outcomes = head.length === 0 ? rest : [...head, ...rest];
      for (let i = 0; i < n; i++) {
        const o = outcomes[i]!;
        const key = this.keys[i];
        if (!("error" in o) && this.unprobed[i] !== 1) this.note(this.paths[i]!, o.ctimeMs);
        if (!("error" in o) && key !== null && key !== undefined) this.cache.storeFile(key, o, this.nowMs);
        this.sinks[i]!(o);
      }
    } finally {
      await this.pool.close();
    }
    for (const t of this.trees) if (t.listingChanged) t.listings?.prune(t.gen);
  }

  private enqueue(
    path: string,
    key: string | null,
    follow: boolean,
    sink: (o: HashOutcome) => void,
    unprobed = false,
  ): void {
    this.paths.push(path);
    this.keys.push(key);
    this.follow.push(follow ? 1 : 0);
    this.sinks.push(sink);
    this.unprobed.push(unprobed ? 1 : 0);
  }

  private walk(
    t: TreeState,
    listings: TreeListings,
    abs: string,
    rel: string,
    st: Stats,
    skip: ReadonlySet<string>,
  ): void {
    this.note(abs, st.ctimeMs);
    let listing: DirEntry | null | undefined = listings.lookup(abs, st, t.gen);
    if (listing === undefined) {
      t.listingChanged = true;
      listing = this.list(listings, t.gen, abs, st, listings.dirs.get(abs));
    }
    if (listing === null) {
      known(t, rel === "" ? "." : `${rel}/`, UNREADABLE);
      return;
    }
    const { names, kinds, stats, shas } = listing;
    const atRoot = rel === "";
    // the names as digested: an entry added or removed later is told from a temporary file's
    // passage (an atomic write's) by them, not by the directory's mtime alone
    if (t.keepSeen) {
      const listed = names.filter((n, i) => kinds[i] !== KIND_OTHER && !(atRoot && skip.has(n)));
      this.seen.set(abs, { follow: false, state: stateKey(st), names: listed, ...(atRoot ? { skip } : {}) });
    }
    for (let i = 0; i < names.length; i++) {
      if (full(t)) return;
      const name = names[i]!;
      if (atRoot && skip.has(name)) continue;
      const kind = kinds[i]!;
      if (kind === KIND_OTHER) continue;
      const childAbs = `${abs}/${name}`;
      const childRel = atRoot ? name : `${rel}/${name}`;
      if (kind === KIND_DIR) {
        // portcullis's state directory (include.ts), should it be kept in a tree: never code
        if (inStateDirReal(childAbs)) continue;
        let cst: Stats;
        try {
          cst = lstatSync(childAbs);
        } catch {
          continue;
        }
        if (cst.isDirectory()) this.walk(t, listings, childAbs, childRel, cst, skip);
        else this.addLoose(t, childAbs, childRel);
        continue;
      }
      // A known digest: one lstat to confirm it. No digest yet: no stat here, the hasher keys the
      // result by fstat of the descriptor it reads.
      let cst: Stats | undefined;
      if (!Number.isNaN(stats[4 * i]!)) {
        try {
          cst = lstatSync(childAbs);
        } catch {
          continue;
        }
        this.note(childAbs, cst.ctimeMs);
        if (
          cst.size === stats[4 * i] &&
          cst.mtimeMs === stats[4 * i + 1] &&
          cst.ctimeMs === stats[4 * i + 2] &&
          cst.ino === stats[4 * i + 3] &&
          (kind === KIND_LINK ? cst.isSymbolicLink() : cst.isFile())
        ) {
          known(t, childRel, shas[i]!);
          if (t.keepSeen) this.seen.set(childAbs, { follow: false, state: stateKey(cst) });
          if (kind === KIND_LINK) t.onLink?.(childAbs);
          continue;
        }
        if (!(kind === KIND_LINK ? cst.isSymbolicLink() : cst.isFile())) {
          this.addLoose(t, childAbs, childRel);
          continue;
        }
      }
      const dir = listing;
      if (kind === KIND_LINK) {
        try {
          cst ??= lstatSync(childAbs);
          this.note(childAbs, cst.ctimeMs);
          const sha = linkDigest(readlinkSync(childAbs));
          listings.storeChild(
            dir,
            i,
            { size: cst.size, mtimeMs: cst.mtimeMs, ctimeMs: cst.ctimeMs, ino: cst.ino, sha },
            this.nowMs,
          );
          known(t, childRel, sha);
          if (t.keepSeen) this.seen.set(childAbs, { follow: false, state: stateKey(cst) });
        } catch {
          continue;
        }
        t.onLink?.(childAbs);
        continue;
      }
      const line = pending(t, childRel);
      this.enqueue(childAbs, null, false, (o) => {
        if (!("error" in o)) {
          listings.storeChild(dir, i, o, this.nowMs);
          t.shas[line] = o.sha;
          if (t.keepSeen) this.seen.set(childAbs, { follow: false, state: stateKey(o) });
        } else t.shas[line] = this.onTreeError(childAbs, o.error);
      });
    }
  }

  /** Reads a directory; keeps the digests of unchanged children from its previous listing. */
  private list(
    listings: TreeListings,
    gen: number,
    abs: string,
    st: Stats,
    previous: DirEntry | undefined,
  ): DirEntry | null {
    let dirents: Dirent[];
    try {
      dirents = readdirSync(abs, { withFileTypes: true });
    } catch {
      return null;
    }
    const items = dirents.map((d) => {
      let kind = d.isFile()
        ? KIND_FILE
        : d.isDirectory()
          ? KIND_DIR
          : d.isSymbolicLink()
            ? KIND_LINK
            : d.isFIFO() || d.isSocket() || d.isCharacterDevice() || d.isBlockDevice()
              ? KIND_OTHER
              : -1;
      if (kind === -1) kind = kindByLstat(`${abs}/${d.name}`);
      return { name: d.name, kind, key: kind === KIND_DIR ? `${d.name}/` : d.name };
    });
    // Sorting directories as "name/" makes the depth-first order equal to the sorted order of
    // the full relative paths, so no global sort is needed.
    items.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const n = items.length;
    const entry: DirEntry = {
      mtimeMs: 0,
      ctimeMs: 0,
      ino: 0,
      names: items.map((x) => x.name),
      kinds: Uint8Array.from(items.map((x) => x.kind)),
      stats: new Float64Array(4 * n).fill(Number.NaN),
      shas: new Array<string>(n).fill(""),
      gen: 0,
    };
    if (previous !== undefined) {
      const old = new Map(previous.names.map((name, i) => [name, i]));
      for (let i = 0; i < n; i++) {
        const j = old.get(entry.names[i]!);
        if (j === undefined || previous.kinds[j] !== entry.kinds[i] || previous.shas[j] === "") continue;
        entry.stats.set(previous.stats.subarray(4 * j, 4 * j + 4), 4 * i);
        entry.shas[i] = previous.shas[j]!;
      }
    }
    listings.store(abs, st, entry, this.nowMs, gen);
    return entry;
  }

  private onTreeError(abs: string, code: string): string | null {
    if (code === "EACCES" || code === "EPERM" || code === "EIO") return UNREADABLE;
    if (code === "ELOOP") {
      // Became a symlink between listing and reading.
      try {
        return linkDigest(readlinkSync(abs));
      } catch {}
    }
    return null; // vanished
  }

  /** A tree or glob file outside any cached listing: digest kept in the single-file map. */
  private addLoose(t: TreeState, abs: string, rel: string): void {
    const cache = this.cache;
    let st: Stats;
    try {
      st = lstatSync(abs);
    } catch {
      return;
    }
    this.note(abs, st.ctimeMs);
    const link = st.isSymbolicLink();
    if (!link && !st.isFile()) return;
    const key = link ? abs + LINK_KEY : abs;
    const hit = t.fresh ? undefined : cache.lookupFile(key, st);
    if (hit !== undefined) {
      known(t, rel, hit.sha);
      if (t.keepSeen) this.seen.set(abs, { follow: false, state: stateKey(st) });
      if (link) t.onLink?.(abs);
      return;
    }
    if (link) {
      try {
        const sha = linkDigest(readlinkSync(abs));
        cache.storeFile(
          key,
          { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino, sha },
          this.nowMs,
        );
        known(t, rel, sha);
        if (t.keepSeen) this.seen.set(abs, { follow: false, state: stateKey(st) });
      } catch {
        return;
      }
      t.onLink?.(abs);
      return;
    }
    const line = pending(t, rel);
    this.enqueue(abs, key, false, (o) => {
      if (!("error" in o)) {
        t.shas[line] = o.sha;
        if (t.keepSeen) this.seen.set(abs, { follow: false, state: stateKey(o) });
      } else t.shas[line] = this.onTreeError(abs, o.error);
    });
  }

  private finishTree(t: TreeState): TreeDigest {
    if (t.result !== null) return t.result;
    const h = t.hash;
    let files = t.streamed;
    let chunk = t.chunk;
    t.chunk = "";
    for (let i = 0; i < t.rels.length; i++) {
      const sha = t.shas[i];
      if (sha === null || sha === undefined) continue; // vanished while digesting
      chunk += `${t.rels[i]}\0${sha}\n`;
      files++;
      if (chunk.length > 65536) {
        h.update(chunk);
        chunk = "";
      }
    }
    h.update(chunk);
    t.result = t.over ? { files, sha256: h.digest("hex"), over: true } : { files, sha256: h.digest("hex") };
    return t.result;
  }
}

function kindByLstat(abs: string): number {
  try {
    const st = lstatSync(abs);
    if (st.isFile()) return KIND_FILE;
    if (st.isDirectory()) return KIND_DIR;
    if (st.isSymbolicLink()) return KIND_LINK;
  } catch {}
  return KIND_OTHER;
}
