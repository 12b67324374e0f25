// The keyring's file name alone, for code that only asks whether a state directory has one
// (src/cli/run.ts) without loading the keyring's crypto and canonical-JSON code.

/** The keyring: `keyring.json` in the state directory (src/keyring/keyring.ts). */
export const KEYRING_FILE = "keyring.json";
