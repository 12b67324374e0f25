/**
 * The V8 flag a gateway runs with: V8's young generation kept at its initial size instead of
 * growing with a burst of calls (to 16 MB per semi-space) and staying so (main.ts,
 * leanYoungGeneration; docs/performance-history.md, "Startup order and idle memory (second
 * pass)"). One string for the two places that need it: the
 * command line sets it before a gateway compiles anything, and the build makes the gateway's V8
 * code caches under it (scripts/bundle.mjs), since V8 refuses a cache made under other flags.
 */
export const GATEWAY_V8_FLAGS = "--semi-space-growth-factor=1";
