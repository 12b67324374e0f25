// Where the keyring lives, apart from the keyring's code: `portcullis run` checks that it exists
// before it loads anything heavy (src/cli/run.ts).
import { join } from "node:path";

export const KEYRING_FILE = "keyring.json";

export function keyringPath(stateDir: string): string {
  return join(stateDir, KEYRING_FILE);
}
