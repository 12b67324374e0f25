// The record wrap keeps of what it changed in one host file (the state directory's wraps), in its
// own module so that the reader of older records (wrapRecordV1.ts) and wrap.ts share it without
// importing each other.
import type { Entry } from "./document.js";

/** One wrapped server: where it stands in its file (its table's path, then its key), before and after. */
export interface RecordedEntry {
  path: string[];
  label: string;
  original: Entry;
  wrapped: Entry;
  /**
   * Set when the store's history under the entry's own label (`own`) was another server's at
   * wrap: `chosen` false, the entry was given the next free label instead; true, `--label` kept
   * `own` all the same. Doctor says it (absent in records written before it was kept).
   */
  labelHistory?: { own: string; chosen: boolean };
}

/**
 * What wrap changed in one host file, so that unwrap can undo it. Entries are keyed by their place
 * in the file (entryPathKey: the table's path and the key), not by name alone: `~/.claude.json`
 * holds a table per project, and each project's servers are wrapped and unwrapped from that project.
 */
export interface WrapRecord {
  format: "portcullis-wrap/2";
  file: string;
  /** the file before its first wrap */
  originalText: string;
  /**
   * the file as wrap last wrote it, or null when the file was changed between two wraps or by a
   * partial unwrap (then originalText is no longer the whole file to go back to)
   */
  wrappedText: string | null;
  entries: Record<string, RecordedEntry>;
}
