import type { Migration } from "../store/migration.js";

/**
 * Tables of the approval module: agent runs, human approval requests, grants,
 * and the digest cache of the executables in agents' process chains.
 *
 * - A run is one client connection; its identity is the process chain of whatever
 *   launched the gateway. `gateway_pid` + `gateway_pid_start` (with the PID namespace and
 *   boot of migration 17) tell whether the
 *   gateway that serves the run is still alive (a pid alone is reused).
 * - An approval request holds everything the human is shown (`review_json`) and is
 *   decided by another process (the CLI) writing `state`; the waiting gateway polls it.
 *   States: pending → approved | denied | expired | cancelled.
 * - A grant is what a human approved. `mode` is `session` (reusable for the run and
 *   the epoch) or `per-call` (single use: consumed when issued, never covers another
 *   call). `tool_defs_json` keeps the tool definitions as approved so that a later
 *   catalog change can be diffed against them. A grant stops covering when it is
 *   revoked (`revoked_at`) or ended (`ended_at`: run ended, single use consumed,
 *   superseded by an epoch change or an authority-expanding tool change).
 */
export const approvalMigration: Migration = {
  version: 3,
  owner: "approval",
  sql: `
    CREATE TABLE runs (
      run               TEXT PRIMARY KEY,
      server_label      TEXT NOT NULL,
      gateway_pid       INTEGER NOT NULL,
      gateway_pid_start TEXT,
      chain_json        TEXT NOT NULL,
      chain_digest      TEXT NOT NULL,
      started_at        TEXT NOT NULL,
      ended_at          TEXT
    );
    CREATE INDEX runs_open ON runs(ended_at, started_at);

    CREATE TABLE approval_requests (
      request               TEXT PRIMARY KEY,
      agent_run             TEXT NOT NULL REFERENCES runs(run),
      server_label          TEXT NOT NULL,
      execution_epoch       TEXT NOT NULL,
      catalog_revision      INTEGER NOT NULL,
      tool                  TEXT NOT NULL,
      fingerprint           TEXT NOT NULL,
      definition_json       TEXT,
      credential_scope_json TEXT NOT NULL,
      mode                  TEXT NOT NULL CHECK (mode IN ('session', 'per-call')),
      review_json           TEXT NOT NULL,
      created_at            TEXT NOT NULL,
      expires_at            TEXT NOT NULL,
      state                 TEXT NOT NULL DEFAULT 'pending'
                            CHECK (state IN ('pending', 'approved', 'denied', 'expired', 'cancelled')),
      decided_at            TEXT,
      decided_by            TEXT,
      decision_for          TEXT CHECK (decision_for IS NULL OR decision_for IN ('session', 'call')),
      reason                TEXT,
      grant_id              TEXT
    );
    CREATE INDEX approval_requests_by_state ON approval_requests(state, created_at);

    CREATE TABLE grants (
      grant_id              TEXT PRIMARY KEY,
      agent_run             TEXT NOT NULL REFERENCES runs(run),
      server_label          TEXT NOT NULL,
      execution_epoch       TEXT NOT NULL,
      catalog_revision      INTEGER NOT NULL,
      tool_scope_json       TEXT NOT NULL,
      tool_defs_json        TEXT NOT NULL,
      credential_scope_json TEXT NOT NULL,
      mode                  TEXT NOT NULL CHECK (mode IN ('session', 'per-call')),
      issued_at             TEXT NOT NULL,
      expires_when          TEXT NOT NULL,
      request               TEXT,
      approved_by           TEXT NOT NULL,
      revoked_at            TEXT,
      revoked_by            TEXT,
      ended_at              TEXT,
      ended_reason          TEXT
    );
    CREATE INDEX grants_by_run ON grants(agent_run, server_label, execution_epoch);
    CREATE INDEX grants_by_label ON grants(server_label, issued_at);

    CREATE TABLE executable_digests (
      path       TEXT PRIMARY KEY,
      size       INTEGER NOT NULL,
      mtime_ms   INTEGER NOT NULL,
      sha256     TEXT NOT NULL,
      checked_at TEXT NOT NULL
    );
  `,
};

/**
 * Signed decisions. A human decision is signed with the keyring's approver key (Ed25519) over a
 * digest of what was decided (src/approval/decision.ts); gateways honour only rows whose
 * signature verifies against the approver key pinned in the audit chain.
 * - `approval_requests.arguments_digest`: the digest of the held call's arguments (what a
 *   per-call approval is bound to); `decision_signature`: the signature of a denial.
 * - `grants.arguments_digest` (per-call grants) and `grants.signature`.
 */
export const signedDecisionsMigration: Migration = {
  version: 4,
  owner: "approval",
  sql: `
    ALTER TABLE approval_requests ADD COLUMN arguments_digest TEXT;
    ALTER TABLE approval_requests ADD COLUMN decision_signature TEXT;
    ALTER TABLE grants ADD COLUMN arguments_digest TEXT;
    ALTER TABLE grants ADD COLUMN signature TEXT;
  `,
};

/**
 * The digest of the review an approval was given on (src/approval/decision.ts, `review`): part of
 * what the grant's signature covers, so the column only lets the statement be rebuilt.
 */
export const reviewDigestMigration: Migration = {
  version: 16,
  owner: "approval (review digest)",
  sql: `
    ALTER TABLE grants ADD COLUMN review_digest TEXT;
  `,
};

/**
 * Where a run's gateway pid and start time mean something (src/identity/procLiveness.ts): its
 * PID namespace and the kernel boot id. A reader in another namespace cannot judge the pid, and
 * must not end the run; a reader on another boot knows the gateway is gone. Null in rows written
 * before this migration: judged by pid and start time in the reader's namespace, as the versions
 * that wrote them did (src/identity/procLiveness.ts).
 * `ended_reason` is "gateway_gone" on a run another process ended because it judged the
 * gateway gone, so that a gateway still alive can tell it was ended from outside.
 */
export const runPlaceMigration: Migration = {
  version: 17,
  owner: "approval (run place)",
  sql: `
    ALTER TABLE runs ADD COLUMN gateway_pid_ns TEXT;
    ALTER TABLE runs ADD COLUMN gateway_boot TEXT;
    ALTER TABLE runs ADD COLUMN ended_reason TEXT;
  `,
};

/**
 * Passkeys (WebAuthn credentials) registered as approvers. Only a cache of the audit chain: a
 * passkey has authority when its pin record there, signed by the approver key, names it and no
 * removal record does (src/approval/passkeyChain.ts). A row inserted here by SQL is listed (as
 * not pinned) and never honoured. `counter` is the last signature counter seen (clone detection
 * when the console completes a decision); `pin_seq` points at the pin record.
 */
export const passkeysMigration: Migration = {
  version: 9,
  owner: "approval (passkeys)",
  sql: `
    CREATE TABLE passkeys (
      credential_id   TEXT PRIMARY KEY,
      name            TEXT NOT NULL,
      public_key      TEXT NOT NULL,
      counter         INTEGER NOT NULL DEFAULT 0,
      rp_id           TEXT NOT NULL,
      transports_json TEXT NOT NULL DEFAULT '[]',
      created_at      TEXT NOT NULL,
      last_used_at    TEXT,
      pin_seq         INTEGER,
      removed_at      TEXT
    );
  `,
};

/**
 * Whether a call waits on a pending request right now, as its gateway records it
 * (src/approval/callWaits.ts): `call_wait` is `waiting` while one of its calls waits (written with
 * the request, and again when a retry joins it), or how the last one stopped waiting while the
 * request stayed pending (`cancelled` by the client, `hold-ended`, `sent-to-console` for a
 * 2026-07-28 call answered input_required, `answered` otherwise); `call_wait_at` is when. A
 * request's `state` says nothing of it: `pending` with a live gateway only says a decision can
 * still reach a retry. Null in rows written before this migration, and in rows a gateway of an
 * older portcullis still running writes after it: shown as not known, never as waiting.
 */
export const callWaitMigration: Migration = {
  version: 19,
  owner: "approval (call wait)",
  sql: `
    ALTER TABLE approval_requests ADD COLUMN call_wait TEXT;
    ALTER TABLE approval_requests ADD COLUMN call_wait_at TEXT;
  `,
};

/**
 * The seq of a run's own `run_started` in the audit log, as the gateway that started it writes its
 * row: in the transaction that appends that record (src/cli/agentRun.ts), so the two never
 * disagree. The Audit page opens that record for a run served now instead of looking for its
 * start among every start carrying the gateway's pid, which any process of the user can append by
 * the thousand (src/console/servedStarts.ts); it believes it only when the record there opens and
 * starts that run under that pid. Null in rows written before this migration, by an older
 * portcullis's gateway still running after it, and by startRun (no record): such a run's start is
 * looked for as before.
 */
export const runStartSeqMigration: Migration = {
  version: 21,
  owner: "approval (run start seq)",
  sql: `
    ALTER TABLE runs ADD COLUMN start_seq INTEGER;
  `,
};
