// One capture's digest work: single files, a dependency tree, glob-selected inputs. Everything that
// the cache cannot answer is queued and hashed in one batch (with worker threads when it is large).
import { createHash, type Hash } from "node:crypto";
import { type Dirent, lstatSync, readdirSync, readlinkSync, type Stats, statSync } from "node:fs";
import { sha256Hex } from "../util/canonical.js";
import { type SeenFile, stateKey } from "./asCaptured.js";
import {
  childShas,
  type DigestCache,
  type DirEntry,
  KIND_DIR,
  KIND_FILE,
  KIND_LINK,
  KIND_OTHER,
  skipKey,
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
  /**
   * Every entry so far matched its listing and gave its line from there (a summary may be kept):
   * cleared by anything else (a listing read again, a digest missing or not matching, an entry
   * left out or gone, a directory unreadable).
   */
  plain: boolean;
  /** the listings' checksum when the walk began, and the root's names left out (null: no summary) */
  summaryOf: { checksum: string; skip: string } | null;
  /**
   * Per listing, how many of its children `DigestJob.unchanged` found as listed during this
   * capture, just before the walk: their files and links are not stat'ed a second time.
   */
  checked: Map<DirEntry, number> | null;
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
    plain: true,
    summaryOf: null,
    checked: null,
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

/** What `DigestJob.unchanged` checks a tree against, and what it found. */
interface Check {
  gen: number;
  listings: TreeListings;
  /** the names left out at the root */
  skip: ReadonlySet<string>;
  /** the links met, in the walk's order */
  links: string[];
  /** the lines the walk would hash */
  files: number;
  /** per listing met: its children before this index were found as listed */
  upTo: Map<DirEntry, number>;
}

/** The check of `listing` stopped at child `i`: those before it matched. Returns false. */
function stop(c: Check, listing: DirEntry, i: number): false {
  c.upTo.set(listing, i);
  return false;
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
    // A whole tree (no bound, nothing kept per file) whose listings are a file's as read: its
    // digest may be summarised, and taken from a summary when every entry matches (unchanged).
    if (t.limit === 0 && !t.keepSeen && listings.checksum !== null && !listings.dirty) {
      const skip = skipKey(skipTop);
      t.summaryOf = { checksum: listings.checksum, skip };
      const summary = cache.treeSummary(root);
      if (summary !== null && summary.skip === skip) {
        const check: Check = { gen: t.gen, listings, skip: skipTop, links: [], files: 0, upTo: new Map() };
        if (this.unchanged(check, root, rootStat, true) && check.files === summary.files) {
          t.result = { files: summary.files, sha256: summary.sha256 };
          // told in the order the walk would have met them, after it, as `walk` tells them
          for (const link of check.links) t.onLink?.(link);
          return () => this.finishTree(t);
        }
        // Something changed: the walk that builds the lines, from the start. The files and links
        // this check found matching their listing a moment ago are not stat'ed again (upTo).
        t.checked = check.upTo;
      }
    }
    this.walk(t, listings, root, "", rootStat, skipTop);
    return () => this.finishTree(t);
  }

  /**
   * The checks of `walk` without its lines: whether every directory under `abs` has the listing
   * it had (lookup: mtime, ctime, inode) and every file and link the digest its listing holds
   * (one lstat each: size, mtime, ctime, inode, type), with nothing left out or gone. Every
   * link met is added to `c.links`, every line the walk would hash counted in `c.files`, and how
   * many children of each listing were checked, in `c.upTo`. Stops at the first entry that
   * differs (false): `walk` then does the tree again.
   */
  private unchanged(c: Check, abs: string, st: Stats, atRoot: boolean): boolean {
    this.note(abs, st.ctimeMs);
    const listing = c.listings.lookup(abs, st, c.gen);
    if (listing === undefined) return false;
    const { names, kinds, stats } = listing;
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!;
      if (atRoot && c.skip.has(name)) continue;
      const kind = kinds[i]!;
      if (kind === KIND_OTHER) continue;
      const childAbs = `${abs}/${name}`;
      let cst: Stats;
      if (kind === KIND_DIR) {
        if (inStateDirReal(childAbs)) return stop(c, listing, i);
        try {
          cst = lstatSync(childAbs);
        } catch {
          return stop(c, listing, i);
        }
        if (!cst.isDirectory() || !this.unchanged(c, childAbs, cst, false)) return stop(c, listing, i);
        continue;
      }
      if (Number.isNaN(stats[4 * i]!)) return stop(c, listing, i);
      try {
        cst = lstatSync(childAbs);
      } catch {
        return stop(c, listing, i);
      }
      this.note(childAbs, cst.ctimeMs);
      if (
        cst.size !== stats[4 * i] ||
        cst.mtimeMs !== stats[4 * i + 1] ||
        cst.ctimeMs !== stats[4 * i + 2] ||
        cst.ino !== stats[4 * i + 3] ||
        !(kind === KIND_LINK ? cst.isSymbolicLink() : cst.isFile())
      )
        return stop(c, listing, i);
      c.files++;
      if (kind === KIND_LINK) c.links.push(childAbs);
    }
    c.upTo.set(listing, names.length);
    return true;
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
      t.plain = false;
      listing = this.list(listings, t.gen, abs, st, listings.dirs.get(abs));
    }
    if (listing === null) {
      t.plain = false;
      known(t, rel === "" ? "." : `${rel}/`, UNREADABLE);
      return;
    }
    const { names, kinds, stats } = listing;
    const shas = childShas(listing);
    const checked = t.checked?.get(listing) ?? 0;
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
        if (inStateDirReal(childAbs)) {
          t.plain = false;
          continue;
        }
        let cst: Stats;
        try {
          cst = lstatSync(childAbs);
        } catch {
          t.plain = false;
          continue;
        }
        if (cst.isDirectory()) this.walk(t, listings, childAbs, childRel, cst, skip);
        else {
          t.plain = false;
          this.addLoose(t, childAbs, childRel);
        }
        continue;
      }
      // A known digest: one lstat to confirm it. No digest yet: no stat here, the hasher keys the
      // result by fstat of the descriptor it reads.
      let cst: Stats | undefined;
      if (!Number.isNaN(stats[4 * i]!)) {
        if (i < checked) {
          // found as listed by `unchanged` in this capture (its lstat, its note)
          known(t, childRel, shas[i]!);
          if (kind === KIND_LINK) t.onLink?.(childAbs);
          continue;
        }
        try {
          cst = lstatSync(childAbs);
        } catch {
          t.plain = false;
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
        t.plain = false;
        if (!(kind === KIND_LINK ? cst.isSymbolicLink() : cst.isFile())) {
          this.addLoose(t, childAbs, childRel);
          continue;
        }
      }
      t.plain = false;
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
      rawShas: null,
      gen: 0,
    };
    if (previous !== undefined) {
      const old = new Map(previous.names.map((name, i) => [name, i]));
      const before = childShas(previous);
      const shas = entry.shas!;
      for (let i = 0; i < n; i++) {
        const j = old.get(entry.names[i]!);
        if (j === undefined || previous.kinds[j] !== entry.kinds[i] || before[j] === "") continue;
        entry.stats.set(previous.stats.subarray(4 * j, 4 * j + 4), 4 * i);
        shas[i] = before[j]!;
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
    // every line came from the listings as read: the next walk that finds them all unchanged
    // may take this digest (tree)
    if (t.plain && !t.over && t.rels.length === 0 && t.summaryOf !== null)
      this.cache.summarize(t.root, t.summaryOf.checksum, t.summaryOf.skip, files, t.result.sha256);
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
