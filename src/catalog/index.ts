/**
 * The catalog module: RFC 8785 fingerprints, verified snapshots, revisions per server label,
 * field-level diffs with authority classification, human renderings, argument validation.
 * See docs/catalog.md.
 */
export { canonicalJson } from "../util/canonical.js";
export { diffCatalogs, diffTool } from "./diff.js";
export { renderCatalog, renderDiff } from "./render.js";
export {
  getRevision,
  latestFingerprint,
  latestRevision,
  latestRevisions,
  listRevisions,
  recordedLabels,
  recordRevision,
  revisionFingerprint,
  type StoredCatalog,
  type StoredRevision,
} from "./revisions.js";
export { shownDiff } from "./shownDiff.js";
export { catalogFingerprint, snapshotOf, storedSnapshot, toolFingerprint } from "./snapshot.js";
export type {
  CatalogDiff,
  CatalogSnapshot,
  Classification,
  Coverage,
  DiffEntry,
  FieldChange,
  InvalidEntry,
  RenameCandidate,
  Tool,
  UnfingerprintableName,
} from "./types.js";
export { ArgumentValidator, type ValidationResult } from "./validator.js";
