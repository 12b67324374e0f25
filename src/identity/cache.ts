// The digest cache: file content digests keyed by (path, size, mtime, ctime, inode), and directory
// listings keyed by (path, mtime, ctime, inode), persisted in compact binary files that are written
// atomically (temporary file + rename). A missing, truncated or corrupt file is ignored: the cache
// starts empty and is rebuilt by the next capture. The checksum catches damage, not forgery: any
// process of the user can write these files, so a capture takes from them only the digests of
// the dependency tree and of installed programs; the server's own files are hashed every time
// (DigestJob.file's `fresh`, docs/identity.md "What the cache is trusted with").
//
// The cache is shared by every gateway of the user, so it holds every dependency tree any of them
// digested (tens of thousands of directories). The listings of each tree therefore live in a file
// of their own, `<name>.trees/<digest of the root>.bin`, read only by a capture of that tree: a
// warm start decodes its own tree, not everyone's (docs/performance-history.md, "Startup and
// memory, third pass": 160–330 ms to decode a 13 MB shared file, against a few ms for one tree).
// The main file keeps the single files' digests and the metadata.
import { mkdirSync, readdirSync, readFileSync, rmSync, type Stats, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { writeFileAtomic } from "../util/atomicFile.js";
import { sha256Hex } from "../util/canonical.js";
import { type HashResult, hashFileSync } from "./hash.js";

export const KIND_OTHER = 0;
export const KIND_FILE = 1;
export const KIND_DIR = 2;
export const KIND_LINK = 3;

/**
 * An entry whose mtime or ctime is this close to the moment it was read is not stored: a write in
 * the same timestamp tick would leave the key unchanged (coarse filesystems tick in 1–2 s).
 */
export const RACY_MS = 2000;

export interface FileEntry {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  sha: string;
  gen: number;
}

export interface DirEntry {
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  /** Children, sorted so that a depth-first walk yields paths in sorted order (see digest.ts). */
  names: string[];
  kinds: Uint8Array;
  /** Per child: size, mtimeMs, ctimeMs, ino of the file (or symlink) whose digest is in `shas`; NaN size = none. */
  stats: Float64Array;
  /**
   * Per child: hex digest, "" when none; null while they are still the bytes read from the tree
   * file (`rawShas`), turned into strings only when asked for (childShas): a warm walk that meets
   * no change and has its tree's summary needs none of them.
   */
  shas: string[] | null;
  /** Per child, 32 bytes of digest as read from the file (zeros: none), while `shas` is null. */
  rawShas: Uint8Array | null;
  gen: number;
}

/** The digests of a listing's children as hex ("" when none), decoded from the file's bytes on first use. */
export function childShas(e: DirEntry): string[] {
  if (e.shas !== null) return e.shas;
  const n = e.names.length;
  const raw = e.rawShas!;
  const hex = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("hex");
  const shas: string[] = new Array(n);
  for (let j = 0; j < n; j++) shas[j] = Number.isNaN(e.stats[4 * j]!) ? "" : hex.slice(64 * j, 64 * j + 64);
  e.shas = shas;
  e.rawShas = null;
  return shas;
}

/**
 * What a walk of a whole tree gave when every directory and file in it matched its listing: the
 * lines it hashed are then a function of the listings alone (names, kinds, digests) and of the
 * names left out at the root, so a later walk that finds every entry matching again may take
 * the digest from here instead of building and hashing those lines again. Bound to the listings
 * by the checksum of the tree file they were read from (or written to). @internal
 */
export interface TreeSummary {
  /** SHA-256 (hex) of the tree file's body the listings are */
  checksum: string;
  /** which names were left out at the root (skipKey) */
  skip: string;
  files: number;
  sha256: string;
}

const SUMMARY_PREFIX = "tree\0";

function summaryKey(root: string): string {
  return `${SUMMARY_PREFIX}${root}`;
}

/** The names a walk leaves out at the root, as one string for a summary. @internal */
export function skipKey(skip: ReadonlySet<string>): string {
  return sha256Hex([...skip].sort().join("\0"));
}

interface StatLike {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
}

const MAGIC = 0x43444350; // "PCDC" little-endian
/**
 * 3: directory listings moved out to one file per tree (version 2 held them all in this file).
 * 4: the single files' entries in columns (encode).
 */
const VERSION = 4;
const TREE_MAGIC = 0x54434350; // "PCCT" little-endian
const TREE_VERSION = 2;
const ZERO_SHA = "0".repeat(64);
const SHA_HEX = /^[0-9a-f]{64}$/;
const MAX_FILES = 20_000;
const MAX_DIRS = 100_000;
/**
 * Listing files kept at most (one per tree root ever digested): past it, writing one removes the
 * least recently written, as the single file of earlier builds bounded its listings. A removed
 * tree is walked and hashed afresh by its next capture, nothing worse.
 */
export const MAX_TREE_FILES = 256;

/**
 * The directory listings of one tree (everything under one root), read from and saved to a file
 * of their own. @internal
 */
export class TreeListings {
  dirs = new Map<string, DirEntry>();
  dirty = false;
  /**
   * SHA-256 (hex) of the tree file's body that the listings in memory are exactly (read from it,
   * or written to it), null when none is (nothing read, or changed since): what a summary is
   * bound to.
   */
  checksum: string | null = null;
  constructor(
    readonly root: string,
    readonly file: string | null,
  ) {
    if (file !== null) this.load(file);
  }

  lookup(key: string, st: Stats, gen: number): DirEntry | undefined {
    const e = this.dirs.get(key);
    if (e === undefined) return undefined;
    if (e.mtimeMs !== st.mtimeMs || e.ctimeMs !== st.ctimeMs || e.ino !== st.ino) return undefined;
    e.gen = gen;
    return e;
  }

  private changed(): void {
    this.dirty = true;
    this.checksum = null;
  }

  store(key: string, st: Stats, entry: DirEntry, nowMs: number, gen: number): boolean {
    if (isRacy(st, nowMs)) {
      if (this.dirs.delete(key)) this.changed();
      return false;
    }
    entry.mtimeMs = st.mtimeMs;
    entry.ctimeMs = st.ctimeMs;
    entry.ino = st.ino;
    entry.gen = gen;
    this.dirs.set(key, entry);
    this.changed();
    return true;
  }

  /** Records the digest of child `i` of a cached directory listing. */
  storeChild(entry: DirEntry, i: number, r: HashResult, nowMs: number): void {
    const s = entry.stats;
    const shas = childShas(entry);
    if (isRacy(r, nowMs)) {
      if (!Number.isNaN(s[4 * i]!)) this.changed();
      s[4 * i] = Number.NaN;
      shas[i] = "";
      return;
    }
    s[4 * i] = r.size;
    s[4 * i + 1] = r.mtimeMs;
    s[4 * i + 2] = r.ctimeMs;
    s[4 * i + 3] = r.ino;
    shas[i] = r.sha;
    this.changed();
  }

  /** Drops the listings that the walk of generation `gen` (or a later one) did not visit. */
  prune(gen: number): void {
    for (const [k, e] of this.dirs) {
      if (e.gen < gen) {
        this.dirs.delete(k);
        this.changed();
      }
    }
  }

  /** Writes the listings if they changed. Never throws; false when it could not. */
  save(): boolean {
    if (this.file === null || !this.dirty) return true;
    if (this.dirs.size > MAX_DIRS) for (const [k, e] of this.dirs) if (e.gen === 0) this.dirs.delete(k);
    const w = new Writer();
    w.u32(TREE_MAGIC);
    w.u32(TREE_VERSION);
    w.str32(this.root);
    encodeListings(w, this.dirs);
    const body = w.done();
    const sum = writeAtomically(this.file, body);
    if (sum === null) return false;
    this.dirty = false;
    this.checksum = sum;
    boundTreeFiles(dirname(this.file), this.file);
    return true;
  }

  private load(file: string): void {
    const read = readChecked(file);
    if (read === null) return;
    const { body, sum } = read;
    try {
      const r = new Reader(body);
      if (r.u32() !== TREE_MAGIC || r.u32() !== TREE_VERSION) throw new Error("not a tree listing");
      if (r.str32() !== this.root) throw new Error("another tree");
      decodeListings(r, this.dirs);
      if (r.off !== body.length) throw new Error("trailing bytes");
      this.checksum = sum;
    } catch {
      this.dirs.clear(); // walked afresh, and written again
    }
  }
}

export class DigestCache {
  readonly file: string | null;
  /** What is held in memory; null once released (read again from the file on next use). */
  private held: {
    files: Map<string, FileEntry>;
    meta: Map<string, string>;
  } | null = null;
  /** The listings of each tree a capture walked, read from their own files on first use. */
  private readonly trees = new Map<string, TreeListings>();
  /** @internal */ get files(): Map<string, FileEntry> {
    return this.contents().files;
  }
  private get meta(): Map<string, string> {
    return this.contents().meta;
  }
  /** @internal */ gen = 1;
  private dirty = false;
  /** Why the persisted cache was not used (null when it loaded, or there was none). */
  loadProblem: string | null = null;

  constructor(file: string | null) {
    this.file = file;
    this.contents();
  }

  private contents(): NonNullable<DigestCache["held"]> {
    if (this.held === null) {
      this.held = { files: new Map(), meta: new Map() };
      if (this.file !== null) this.load(this.file);
    }
    return this.held;
  }

  /** The listings of the tree under `root`, read from its own file the first time. @internal */
  listings(root: string): TreeListings {
    let t = this.trees.get(root);
    if (t === undefined) {
      t = new TreeListings(root, this.treeFile(root));
      this.trees.set(root, t);
    }
    return t;
  }

  /**
   * The summary of the tree under `root` (TreeSummary) when one is bound to exactly the listings
   * held for it now, else null. @internal
   */
  treeSummary(root: string): TreeSummary | null {
    const t = this.trees.get(root);
    if (t === undefined || t.dirty || t.checksum === null) return null;
    const value = this.meta.get(summaryKey(root));
    if (value === undefined) return null;
    const [checksum, skip, files, sha256] = value.split(" ");
    if (checksum !== t.checksum || skip === undefined || sha256 === undefined || !SHA_HEX.test(sha256))
      return null;
    const n = Number(files);
    if (!Number.isSafeInteger(n) || n < 0) return null;
    return { checksum, skip, files: n, sha256 };
  }

  /**
   * Keeps what a walk of the tree under `root` gave when every entry matched its listing, bound
   * to the listings' checksum `checksum` (taken when the walk began): nothing is kept when they
   * are no longer those. @internal
   */
  summarize(root: string, checksum: string, skip: string, files: number, sha256: string): void {
    const t = this.trees.get(root);
    if (t === undefined || t.dirty || t.checksum !== checksum) return;
    const key = summaryKey(root);
    const value = `${checksum} ${skip} ${files} ${sha256}`;
    if (this.meta.get(key) === value) return;
    // set last, so that past the bound the summaries written longest ago go first
    this.meta.delete(key);
    this.meta.set(key, value);
    this.dirty = true;
    let over = -MAX_TREE_FILES;
    for (const k of this.meta.keys()) if (k.startsWith(SUMMARY_PREFIX)) over++;
    for (const k of this.meta.keys()) {
      if (over <= 0) break;
      if (k.startsWith(SUMMARY_PREFIX)) {
        this.meta.delete(k);
        over--;
      }
    }
  }

  /** Where the listings of the tree under `root` are kept (null: nowhere, an in-memory cache). */
  treeFile(root: string): string | null {
    if (this.file === null) return null;
    return join(`${this.file.replace(/\.bin$/, "")}.trees`, `${sha256Hex(root).slice(0, 32)}.bin`);
  }

  /**
   * Lets go of the entries in memory once they are saved: a gateway holds them only while it
   * captures an identity (tens of MB for a large node_modules), and reads the files again for the
   * next capture (a file change, a restart). False, keeping them, when they are not saved.
   */
  release(): boolean {
    if (this.file === null || this.dirty) return false;
    for (const t of this.trees.values()) if (t.dirty) return false;
    this.held = null;
    this.trees.clear();
    return true;
  }

  /** Number of file digests held. */
  get size(): number {
    return this.files.size;
  }

  /** @internal */ lookupFile(key: string, st: StatLike): FileEntry | undefined {
    const e = this.files.get(key);
    if (e === undefined) return undefined;
    if (e.size !== st.size || e.mtimeMs !== st.mtimeMs || e.ctimeMs !== st.ctimeMs || e.ino !== st.ino) {
      return undefined;
    }
    e.gen = this.gen;
    return e;
  }

  /** @internal */ storeFile(key: string, r: HashResult, nowMs: number): void {
    if (isRacy(r, nowMs)) {
      if (this.files.delete(key)) this.dirty = true;
      return;
    }
    // The server's own files are hashed at every capture (DigestJob.file's `fresh`): the same
    // bytes under the same key change nothing, and the file need not be written again.
    const had = this.files.get(key);
    if (
      had !== undefined &&
      had.sha === r.sha &&
      had.size === r.size &&
      had.mtimeMs === r.mtimeMs &&
      had.ctimeMs === r.ctimeMs &&
      had.ino === r.ino
    ) {
      had.gen = this.gen;
      return;
    }
    this.files.set(key, {
      size: r.size,
      mtimeMs: r.mtimeMs,
      ctimeMs: r.ctimeMs,
      ino: r.ino,
      sha: r.sha,
      gen: this.gen,
    });
    this.dirty = true;
  }

  getMeta(key: string): string | undefined {
    return this.meta.get(key);
  }

  setMeta(key: string, value: string): void {
    if (this.meta.get(key) === value) return;
    this.meta.set(key, value);
    this.dirty = true;
  }

  /**
   * Digest of one file's content (symlinks followed), through the cache. `openPath` reads the
   * bytes from another name for the same file (e.g. /proc/PID/exe for a running executable).
   * Throws the file system error (with its `code`) when the file cannot be read.
   */
  digestFileSync(path: string, openPath: string = path, nowMs: number = Date.now()): string {
    const st = statSync(openPath);
    const hit = st.isFile() ? this.lookupFile(path, st) : undefined;
    if (hit !== undefined) return hit.sha;
    const r = hashFileSync(openPath, true);
    this.storeFile(path, r, nowMs);
    return r.sha;
  }

  /**
   * The cached digest of one file (symlinks followed, bytes read from `openPath`), or null when
   * the cache has none for its current size, mtime, ctime and inode. Reads only: nothing is hashed
   * or stored, so a caller outside a capture leaves the cache as the capture saved it.
   */
  cachedDigest(path: string, openPath: string = path): string | null {
    let st: Stats;
    try {
      st = statSync(openPath);
    } catch {
      return null;
    }
    return st.isFile() ? (this.lookupFile(path, st)?.sha ?? null) : null;
  }

  /** Writes what changed (temporary files + rename). Never throws; false when it could not. */
  save(): boolean {
    if (this.file === null) return true;
    let ok = true;
    for (const t of this.trees.values()) if (!t.save()) ok = false;
    if (!this.dirty) return ok;
    // Bounded: past a size, entries this process never used (other projects, deleted files) go.
    if (this.files.size > MAX_FILES) for (const [k, e] of this.files) if (e.gen === 0) this.files.delete(k);
    if (writeAtomically(this.file, this.encode()) === null) return false;
    this.dirty = false;
    return ok;
  }

  private load(file: string): void {
    let buf: Buffer;
    try {
      buf = readFileSync(file);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== "ENOENT") this.loadProblem = `cannot read ${file} (${code})`;
      return;
    }
    try {
      this.decode(buf);
    } catch (e) {
      this.files.clear();
      this.meta.clear();
      this.loadProblem = `ignored corrupt cache ${file}: ${(e as Error).message}`;
    }
  }

  // The single files' digests in columns, as the listings are (below): all paths in one string,
  // every entry's stats in one array of doubles, every digest in one run of bytes. A gateway
  // decodes this file cold (its code not yet compiled), where a read or write per field of each
  // entry cost about 15 µs: 35-55 ms of CPU to load 2,342 entries and as much to save them, at
  // every start that loads it (docs/performance-history.md, "Session thirty").
  private encode(): Buffer {
    const keys: string[] = [];
    const shas: string[] = [];
    const stats = new Float64Array(4 * this.files.size);
    for (const [k, e] of this.files) {
      if (!SHA_HEX.test(e.sha)) continue; // never held otherwise; one would shift every later digest
      const at = 4 * keys.length;
      stats[at] = e.size;
      stats[at + 1] = e.mtimeMs;
      stats[at + 2] = e.ctimeMs;
      stats[at + 3] = e.ino;
      keys.push(k);
      shas.push(e.sha);
    }
    const w = new Writer();
    w.u32(MAGIC);
    w.u32(VERSION);
    w.u32(keys.length);
    w.u32(this.meta.size);
    w.str32(keys.join("\0"));
    w.align8();
    w.bytes(new Uint8Array(stats.buffer, 0, 4 * keys.length * 8));
    w.bytes(Buffer.from(shas.join(""), "hex"));
    for (const [k, v] of this.meta) {
      w.str32(k);
      w.str32(v);
    }
    return w.done();
  }

  private decode(buf: Buffer): void {
    const body = checked(buf);
    const r = new Reader(body);
    if (r.u32() !== MAGIC) throw new Error("not a digest cache");
    const version = r.u32();
    // Version 2 also held every tree's listings, version 3 each entry's fields one after another:
    // start empty, the entries are stored again by the next captures.
    if (version === 2 || version === 3) return;
    if (version !== VERSION) throw new Error("unknown version");
    const nFiles = r.u32();
    const nMeta = r.u32();
    const joined = r.str32();
    const keys = nFiles === 0 ? [] : joined.split("\0");
    if (keys.length !== nFiles) throw new Error("wrong number of paths");
    r.align8();
    const stats = r.f64s(4 * nFiles);
    const hex = r.bytes(32 * nFiles).toString("hex");
    for (let i = 0; i < nFiles; i++) {
      const at = 4 * i;
      this.files.set(keys[i]!, {
        size: stats[at]!,
        mtimeMs: stats[at + 1]!,
        ctimeMs: stats[at + 2]!,
        ino: stats[at + 3]!,
        sha: hex.slice(64 * i, 64 * i + 64),
        gen: 0,
      });
    }
    for (let i = 0; i < nMeta; i++) this.meta.set(r.str32(), r.str32());
    if (r.off !== body.length) throw new Error("trailing bytes");
  }
}

/** Removes the oldest listing files of `dir` beyond MAX_TREE_FILES, never `keep`. Never throws. */
function boundTreeFiles(dir: string, keep: string): void {
  try {
    const names = readdirSync(dir).filter((n) => n.endsWith(".bin"));
    if (names.length <= MAX_TREE_FILES) return;
    const aged = names
      .map((n) => join(dir, n))
      .filter((f) => f !== keep)
      .map((f) => {
        try {
          return { f, t: statSync(f).mtimeMs };
        } catch {
          return { f, t: 0 };
        }
      })
      .sort((a, b) => a.t - b.t);
    for (const { f } of aged.slice(0, names.length - MAX_TREE_FILES)) rmSync(f, { force: true });
  } catch {
    /* a cache: bounded on a later write */
  }
}

/** The body of a cache file whose trailing SHA-256 checks out; throws otherwise. */
function checked(buf: Buffer): Buffer {
  return checkedSum(buf).body;
}

/** The body of a cache file and its SHA-256 (hex), which the file's trailer matches; throws otherwise. */
function checkedSum(buf: Buffer): { body: Buffer; sum: string } {
  if (buf.length < 40) throw new Error("too short");
  const body = buf.subarray(0, buf.length - 32);
  const sum = sha256Hex(body);
  if (sum !== buf.toString("hex", buf.length - 32)) throw new Error("checksum mismatch");
  return { body, sum };
}

/** A tree file's checked body, or null when it is missing or damaged (the tree is walked afresh). */
function readChecked(file: string): { body: Buffer; sum: string } | null {
  try {
    return checkedSum(readFileSync(file));
  } catch {
    return null;
  }
}

/**
 * Writes body + its SHA-256 atomically over `file` (src/util/atomicFile.ts), not fsynced: the cache
 * is saved at every server start, on the way to its epoch, and a lost save costs only a digest
 * computed again (the checksum rejects a damaged file). Never throws; the SHA-256 (hex) when
 * written, null when not.
 */
function writeAtomically(file: string, body: Buffer): string | null {
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const sum = sha256Hex(body);
    writeFileAtomic(file, Buffer.concat([body, Buffer.from(sum, "hex")]), { durable: false });
    return sum;
  } catch {
    return null;
  }
}

// A tree's listings in columns: all directory keys in one string, all child names in another,
// then every directory's fixed fields, every child's kind, stats and digest, each in one piece.
// Decoding then costs a handful of bulk reads for the whole tree and a few views per directory,
// instead of several small reads and copies per directory (docs/performance-history.md, "Startup
// and memory, third pass": 1,197 directories, 7,801 files decoded in about a third of the CPU
// time).
function encodeListings(w: Writer, dirs: Map<string, DirEntry>): void {
  const keys: string[] = [];
  const counts = new Uint32Array(dirs.size);
  const fixed = new Float64Array(3 * dirs.size);
  let total = 0;
  let d = 0;
  for (const [k, e] of dirs) {
    keys.push(k);
    counts[d] = e.names.length;
    fixed[3 * d] = e.mtimeMs;
    fixed[3 * d + 1] = e.ctimeMs;
    fixed[3 * d + 2] = e.ino;
    total += e.names.length;
    d++;
  }
  w.u32(dirs.size);
  w.u32(total);
  w.str32(keys.join("\0"));
  // One flat list: an empty directory adds no name (joining per directory would add an empty one,
  // and the file would never load again).
  const names: string[] = [];
  for (const e of dirs.values()) for (const n of e.names) names.push(n);
  w.str32(names.join("\0"));
  w.align8();
  w.bytes(new Uint8Array(fixed.buffer));
  w.bytes(new Uint8Array(counts.buffer));
  for (const e of dirs.values()) w.bytes(e.kinds);
  w.align8();
  for (const e of dirs.values())
    w.bytes(new Uint8Array(e.stats.buffer, e.stats.byteOffset, 32 * e.names.length));
  // the digests still as read (their bytes again), or as hex when decoded
  for (const e of dirs.values()) {
    if (e.shas === null) w.bytes(e.rawShas!);
    else {
      let hex = "";
      for (const sha of e.shas) hex += sha === "" ? ZERO_SHA : sha;
      w.hexN(hex, 32 * e.names.length);
    }
  }
}

function decodeListings(r: Reader, into: Map<string, DirEntry>): void {
  const nDirs = r.u32();
  const total = r.u32();
  const keysText = r.str32();
  const namesText = r.str32();
  const keys = nDirs === 0 ? [] : keysText.split("\0");
  const names = total === 0 ? [] : namesText.split("\0");
  if (keys.length !== nDirs || names.length !== total) throw new Error("bad listing names");
  r.align8();
  const fixed = r.f64s(3 * nDirs);
  const counts = r.u32s(nDirs);
  const kinds = r.bytes(total);
  r.align8();
  const stats = r.f64s(4 * total);
  const raw = r.bytes(32 * total);
  let at = 0;
  for (let d = 0; d < nDirs; d++) {
    const n = counts[d]!;
    if (at + n > total) throw new Error("bad directory size");
    into.set(keys[d]!, {
      mtimeMs: fixed[3 * d]!,
      ctimeMs: fixed[3 * d + 1]!,
      ino: fixed[3 * d + 2]!,
      names: names.slice(at, at + n),
      kinds: kinds.subarray(at, at + n),
      stats: stats.subarray(4 * at, 4 * (at + n)),
      shas: null,
      rawShas: raw.subarray(32 * at, 32 * (at + n)),
      gen: 0,
    });
    at += n;
  }
  if (at !== total) throw new Error("bad directory sizes");
}

function isRacy(st: { mtimeMs: number; ctimeMs: number }, nowMs: number): boolean {
  return st.mtimeMs > nowMs - RACY_MS || st.ctimeMs > nowMs - RACY_MS;
}

class Writer {
  private buf = Buffer.allocUnsafe(1 << 16);
  private off = 0;

  private room(n: number): void {
    if (this.off + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.off + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.off);
    this.buf = next;
  }
  u8(v: number): void {
    this.room(1);
    this.buf[this.off++] = v;
  }
  u32(v: number): void {
    this.room(4);
    this.buf.writeUInt32LE(v, this.off);
    this.off += 4;
  }
  f64(v: number): void {
    this.room(8);
    this.buf.writeDoubleLE(v, this.off);
    this.off += 8;
  }
  str16(s: string): void {
    const n = Buffer.byteLength(s);
    if (n > 0xffff) throw new Error("path too long");
    this.room(2 + n);
    this.buf.writeUInt16LE(n, this.off);
    this.buf.write(s, this.off + 2, "utf8");
    this.off += 2 + n;
  }
  str32(s: string): void {
    const n = Buffer.byteLength(s);
    this.room(4 + n);
    this.buf.writeUInt32LE(n, this.off);
    this.buf.write(s, this.off + 4, "utf8");
    this.off += 4 + n;
  }
  hexN(hex: string, n: number): void {
    this.room(n);
    this.buf.write(hex, this.off, n, "hex");
    this.off += n;
  }
  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.off);
    this.off += b.length;
  }
  align8(): void {
    while (this.off % 8 !== 0) this.u8(0);
  }
  done(): Buffer {
    return this.buf.subarray(0, this.off);
  }
}

class Reader {
  off = 0;
  constructor(private readonly buf: Buffer) {}
  private need(n: number): void {
    if (this.off + n > this.buf.length) throw new Error("truncated");
  }
  u8(): number {
    this.need(1);
    return this.buf[this.off++]!;
  }
  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.off);
    this.off += 4;
    return v;
  }
  f64(): number {
    this.need(8);
    const v = this.buf.readDoubleLE(this.off);
    this.off += 8;
    return v;
  }
  str16(): string {
    this.need(2);
    const n = this.buf.readUInt16LE(this.off);
    this.need(2 + n);
    const s = this.buf.toString("utf8", this.off + 2, this.off + 2 + n);
    this.off += 2 + n;
    return s;
  }
  str32(): string {
    const n = this.u32();
    this.need(n);
    const s = this.buf.toString("utf8", this.off, this.off + n);
    this.off += n;
    return s;
  }
  /** `n` doubles, viewed in place when aligned (copied otherwise); the bytes are the caller's to change. */
  f64s(n: number): Float64Array {
    const b = this.bytes(8 * n);
    if (b.byteOffset % 8 === 0) return new Float64Array(b.buffer, b.byteOffset, n);
    return new Float64Array(new Uint8Array(b).buffer);
  }
  u32s(n: number): Uint32Array {
    const b = this.bytes(4 * n);
    if (b.byteOffset % 4 === 0) return new Uint32Array(b.buffer, b.byteOffset, n);
    return new Uint32Array(new Uint8Array(b).buffer);
  }
  bytes(n: number): Buffer {
    this.need(n);
    const b = this.buf.subarray(this.off, this.off + n);
    this.off += n;
    return b;
  }
  align8(): void {
    while (this.off % 8 !== 0) this.off++;
  }
}
