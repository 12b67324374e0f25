/**
 * The newest schema version this build's migrations bring a store to, as a constant of its own:
 * `run` compares a store's header with it before it spawns its server (src/cli/run.ts, "early"),
 * when the migrations and the modules behind them are not loaded yet (that is what lets the
 * server start while the gateway loads). It must equal the newest migration's version
 * (schemaVersion.ts's KNOWN_SCHEMA_VERSION): test/unit/known-version.test.ts keeps the two in step.
 */
export const NEWEST_SCHEMA_VERSION = 22;
