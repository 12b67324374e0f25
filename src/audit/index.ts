export {
  AUDIT_EVENT_TYPES,
  type AuditEvent,
  AuditEventError,
  type AuditEventType,
  argumentsDigest,
  assertAuditable,
  auditable,
  redactSecrets,
} from "./events.js";
export { ExportLineTooLongError, exportLines, MAX_EXPORT_LINE_BYTES } from "./exportFile.js";
export {
  type Appended,
  AuditChainError,
  AuditLog,
  type AuditLogOptions,
  AuditOpenError,
  AuditRecordOpener,
  exportRecords,
  firstRecordTooLongToExport,
  makeCheckpoint,
  type OpenedRecord,
  openRecords,
  RecordTooLongToExportError,
  storedChunks,
  storedRecords,
  verifyStore,
} from "./log.js";
export { type AuditHeader, GENESIS_PREV, type StoredRecord } from "./record.js";
export {
  CHECKPOINT_FORMAT,
  ChainVerifier,
  type Checkpoint,
  CheckpointFormatError,
  parseCheckpoint,
  type VerifyResult,
  verifyChain,
  verifyExport,
} from "./verify.js";
export {
  type ActivityEntry,
  activityView,
  type CallCounts,
  callCounts,
  type GatewayWithoutRun,
  gatewaysWithoutRunView,
  type SessionView,
  type StoredEnd,
  sessionsView,
  shownOutcome,
} from "./views.js";
