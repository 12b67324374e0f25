/**
 * The one place that decides what a secret looks like. Everything portcullis shows or keeps
 * (status, reviews, approval requests, execution records, status lines, the audit's clear
 * arguments) goes through here first. Digests are computed by callers over the real values,
 * before redaction: a digest identifies, a redacted copy is only for people and the store.
 *
 * Three shapes are recognised:
 *   - a value under a key named like a secret, at any depth (keys compared without case or
 *     separators: `API-Key`, `api_key`, `apiKey` are one name);
 *   - a string that looks like a credential wherever it is (bearer tokens, JWTs, PEM private
 *     keys, well-known token prefixes, AWS access keys, passwords in URLs and users that look
 *     like tokens, `token=…` pairs);
 *   - command-line words: a value after a secret-named flag (`--token S`, `--api-key=S`, `-p S`)
 *     and `NAME=value` words whose NAME is secret-like.
 */

// The code is in src/util/redact/, one file per concern; this file is its only public face.
export { displayCommand, redactArgv } from "./redact/commandLine.js";
export { isSecretName } from "./redact/names.js";
export { trailingPunctuation } from "./redact/punctuation.js";
export { redactEvent, redactRecord } from "./redact/records.js";
export { REDACTED } from "./redact/redacted.js";
export { redactSchemaDefaults } from "./redact/schemaDefaults.js";
export { secretRefTargets } from "./redact/schemaRefs.js";
export { redactSchemaValue, SCHEMA_VALUES, schemaOwner } from "./redact/schemaValues.js";
export { redactQueries, redactText } from "./redact/text.js";
export { isSecretQueryParameter, looksGenerated, MAX_DECODES } from "./redact/urlQueries.js";
export { looksLikeCredentialUser } from "./redact/urlUsers.js";
export { type RedactOptions, redactStrings, redactValue, redactValueUnder } from "./redact/values.js";
