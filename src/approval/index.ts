/**
 * The approval module: agent runs (identified by the process chain that launched
 * the gateway), grants bound to (run, server label, epoch, tool fingerprints,
 * credential scopes), human approval requests decided from another process.
 * See docs/security.md for what this protects against and what it does not.
 */

export { endRunsOfGoneGateways } from "./abandoned.js";
export { Authorizer, type AuthorizerEvents, type AuthorizerOptions } from "./authorizer.js";
export {
  type ChainEntry,
  chainExecutables,
  MAX_CHAIN_DEPTH,
  processChain,
  processStartTime,
} from "./chain.js";
export {
  type ActiveGrant,
  type ApprovalConfig,
  activeGrants,
  type Grant,
  type GrantRecord,
  getGrant,
  publicGrant,
  requiredScopes,
  resolveMode,
  revokeGrant,
} from "./grants.js";
export { ApproverKeyMismatchError, PIN_EVENT, pinnedSigner } from "./pin.js";
export { renderGrant, renderReview } from "./render.js";
export {
  type ApprovalRequest,
  type Decision,
  DecisionError,
  type DecisionResult,
  decideRequest,
  getRequest,
  pendingRequests,
  type Review,
} from "./requests.js";
export {
  ENDED_IN_STORE,
  endOwnRunRows,
  endRun,
  endRunRows,
  getRun,
  insertRun,
  newRun,
  type Run,
  recordEndedInStore,
  runEndedElsewhere,
  runStored,
  startRun,
} from "./runs.js";
export { approvalMigration } from "./schema.js";
export { DecisionVerifier, type Verdict } from "./trust.js";
