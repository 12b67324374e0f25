/**
 * Where the chain's approver key pins are found without reading the chain (src/approval/pin.ts).
 *
 * A pin record's header says `"type":"approver_key_pinned"` in its first 512 bytes (headers are
 * shorter). A partial index holds the seq of exactly those records, kept by SQLite itself at each
 * insert (the test is deterministic: a substring search of the first 512 bytes), so a gateway's
 * start finds the first pin with one index read instead of reading every record of the chain.
 * Nothing is remembered outside the chain: the index says which records to read, and each is
 * still read and checked (header, then the sealed pin) as before; the first pin stays the one
 * trusted.
 *
 * The query must spell the same expression, with the same literal, for SQLite to use the index.
 */
export const PIN_TYPE_HEX = "2274797065223a22617070726f7665725f6b65795f70696e6e656422"; // "type":"approver_key_pinned"
export const IS_PIN_RECORD = `instr(substr(record, 1, 512), X'${PIN_TYPE_HEX}') > 0`;
export const PIN_INDEX_SQL = `CREATE INDEX audit_records_pins ON audit_records (seq) WHERE ${IS_PIN_RECORD};`;
