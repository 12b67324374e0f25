/**
 * `portcullis run`'s options, apart from run itself: doctor reads a host entry's run arguments
 * with them (which options take a value, so that a label is told from an option's value)
 * without loading the gateway's modules.
 */
export const RUN_OPTIONS = {
  label: { type: "string" },
  "on-change": { type: "string" },
  "on-expand": { type: "string" },
  approval: { type: "string" },
  watch: { type: "string", multiple: true },
  url: { type: "string" },
  header: { type: "string", multiple: true },
  "allow-insecure": { type: "boolean" },
  "state-dir": { type: "string" },
  config: { type: "string" },
  "hold-timeout": { type: "string" },
  "max-message-bytes": { type: "string" },
  "approval-timeout": { type: "string" },
  "request-ttl": { type: "string" },
  "audit-sync": { type: "string" },
  "audit-arguments": { type: "string" },
  listen: { type: "string" },
  "listen-token-file": { type: "string" },
  "no-auth": { type: "boolean" },
  "listen-max-sessions": { type: "string" },
  "listen-idle-timeout": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;
