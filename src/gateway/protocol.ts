/** The two MCP eras the gateway speaks on both sides. */
export type Era = "legacy" | "modern";

/** 2026-07-28: per-request protocol version in `_meta`. */
export const PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion";
/** 2026-07-28: the listen request's id, stamped on every notification of its stream. */
export const SUBSCRIPTION_ID_META = "io.modelcontextprotocol/subscriptionId";
