// Execution identity: which code answers calls. See docs/identity.md.

export { forgetSeen } from "./asCaptured.js";
export { DigestCache } from "./cache.js";
export {
  type ChangeProbe,
  captureStaticIdentity,
  changedParts,
  envDigest,
  finishRecord,
  IdentityError,
  identityDigest,
} from "./capture.js";
export { checkIncludes, IncludeError, setStateDir } from "./include.js";
export { type ListOptions, listDescendants, processStartTime } from "./proc.js";
export {
  chainDigest,
  remoteIdentityDigest,
  remoteRecord,
  writtenNumbersUnder,
  writtenServerInfo,
} from "./remote.js";
export { isNodeWatchNotice, selfWatcher, selfWatcherOf, underNodeWatch } from "./selfWatch.js";
export type {
  ExecutionRecord,
  FileDigest,
  LaunchSpec,
  ProcessFact,
  ReachedTree,
  RemoteFacts,
  StaticIdentity,
} from "./types.js";
export { type ArtifactWatcher, watchArtifacts, watchedPaths } from "./watch.js";
