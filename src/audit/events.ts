import { canonicalString, sha256Tag } from "../util/canonical.js";
import { redactValue } from "../util/redact.js";
import { setOwn } from "../util/setOwn.js";

/** Every event type the audit log accepts (docs/audit-format.md, "Event fields"). */
export const AUDIT_EVENT_TYPES = [
  "server_started",
  "server_identified",
  "server_exited",
  "server_replaced",
  "artifact_changed",
  "catalog_revised",
  "run_started",
  "run_ended",
  "catalog_served",
  "approval_requested",
  "approval_granted",
  "approval_denied",
  "authorization_denied",
  "tool_called",
  "tool_result",
  "call_interrupted",
  "vault_locked",
  "vault_unlocked",
  "credential_injected",
  "approver_key_pinned",
  "passphrase_changed",
  "keys_rotated",
  "passkey_pinned",
  "passkey_removed",
  "decision_rejected",
  "request_forwarded",
  "grants_revoked",
  "credential_released",
  "approval_expired",
  "egress",
] as const;

export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

/**
 * A plain JSON object from the gateway. The fields the views read are listed in
 * docs/audit-format.md ("Event fields"); anything else is kept as given.
 */
export type AuditEvent = { type: AuditEventType; [k: string]: unknown };

const EVENT_TYPE_SET: ReadonlySet<string> = new Set(AUDIT_EVENT_TYPES);

/** Keys whose string values are refused: the log never holds a secret value. */
export const SECRET_KEY_PATTERN = /secret|password|passphrase|token|api[-_]?key|credential[-_]?value/i;

export class AuditEventError extends Error {
  override name = "AuditEventError";
}

/**
 * SHA-256 over the RFC 8785 canonical JSON of a call's arguments, as
 * "sha256:<hex>". Callers log this instead of the arguments.
 */
export function argumentsDigest(args: unknown): string {
  return sha256Tag(canonicalString(args === undefined ? null : args));
}

/**
 * A copy of a call's arguments fit for the log when a server is configured to record them
 * (`audit.arguments: "clear"`): the project's one redaction (src/util/redact.ts), every
 * secret-named value at any depth and every credential-shaped string replaced by
 * `{ "redacted": true }` (not a string, so the event still passes assertAuditable).
 */
export function redactSecrets(value: unknown): unknown {
  // redactValue keeps an empty string under a secret-named key (it hides nothing), but the log
  // refuses any string there: `{"password": ""}` made the call's intent unwritable, and the call
  // was refused audit_unavailable with `audit.arguments: "clear"` only.
  return auditable(redactValue(value, { marker: { redacted: true } }));
}

/** What replaces a string the log would refuse (see auditable). */
const REDACTED_VALUE = { redacted: true } as const;

/**
 * A copy of a JSON value that assertAuditable accepts whatever keys it holds: every string
 * directly under a key named like a secret (SECRET_KEY_PATTERN, at any depth) becomes
 * `{ "redacted": true }`; everything else is kept as it is. For values the gateway records but
 * did not choose the keys of: a server's tool definitions (catalog_revised), what a server reached
 * by URL says of itself (serverInfo, capabilities in an execution record), a client's arguments.
 * Without it one such string (`"examples": [{"token": "abc"}]` in an input schema, an OAuth
 * `token_endpoint` in a server's capabilities) made the whole event unwritable, and the gateway
 * dropped it with a warning: a server could keep every revision of its catalog out of the log.
 * Keys are kept as own properties, `__proto__` included (JSON.parse makes it one).
 */
export function auditable<T>(value: T): T {
  return copyAuditable(value) as T;
}

function copyAuditable(v: unknown): unknown {
  if (typeof v !== "object" || v === null) return v;
  if (Array.isArray(v)) return v.map(copyAuditable);
  const out: Record<string, unknown> = {};
  // (Object.keys, each value read by its key: as Object.entries reads them, without a pair array
  // per key, a million of them for a large catalog's diff)
  const obj = v as Record<string, unknown>;
  for (const k of Object.keys(obj)) {
    const x = obj[k];
    const value =
      typeof x === "string" && SECRET_KEY_PATTERN.test(k) ? { ...REDACTED_VALUE } : copyAuditable(x);
    setOwn(out, k, value);
  }
  return out;
}

/**
 * Refuses (throws AuditEventError) an event that is not a plain JSON object of a
 * known type, or that carries a string under a key named like a secret
 * (secret, password, passphrase, token, apiKey, credentialValue — any case, anywhere
 * in the object). Called by AuditLog.append before anything is sealed.
 */
export function assertAuditable(e: unknown): asserts e is AuditEvent {
  if (typeof e !== "object" || e === null || Array.isArray(e)) {
    throw new AuditEventError("an audit event must be a plain object");
  }
  const type = (e as { type?: unknown }).type;
  if (typeof type !== "string" || !EVENT_TYPE_SET.has(type)) {
    throw new AuditEventError(`unknown audit event type: ${JSON.stringify(type)}`);
  }
  walk(e, "", new Set());
}

function walk(value: unknown, path: string, seen: Set<object>): void {
  switch (typeof value) {
    case "string":
    case "boolean":
    case "undefined":
      return;
    case "number":
      if (!Number.isFinite(value)) throw new AuditEventError(`${path || "event"} is not a finite number`);
      return;
    case "object": {
      if (value === null) return;
      if (seen.has(value)) throw new AuditEventError(`${path || "event"} refers to itself`);
      seen.add(value);
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) walk(value[i], `${path}[${i}]`, seen);
      } else {
        // (for…in over own keys rather than Object.entries: no array per object, and the path
        // text is only made for a nested value or an error; this runs on every record)
        const obj = value as Record<string, unknown>;
        for (const k in obj) {
          if (!Object.hasOwn(obj, k)) continue;
          const v = obj[k];
          const t = typeof v;
          if (t === "string") {
            if (SECRET_KEY_PATTERN.test(k)) {
              throw new AuditEventError(
                `refusing to audit a string under "${path ? `${path}.${k}` : k}": keys named like secrets are never written to the audit log`,
              );
            }
          } else if (t !== "boolean" && v !== undefined && !(t === "number" && Number.isFinite(v))) {
            walk(v, path ? `${path}.${k}` : k, seen);
          }
        }
      }
      seen.delete(value);
      return;
    }
    default:
      throw new AuditEventError(`${path || "event"} is a ${typeof value}, not a JSON value`);
  }
}
