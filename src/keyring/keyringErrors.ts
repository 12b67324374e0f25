/**
 * The keyring's errors, one class per way it fails (missing, there already, wrong passphrase,
 * exposed, damaged, tampered, the same passphrase given twice). Apart from the keyring's code:
 * the commands and doctor tell them apart by class, and import them without the crypto.
 */
import { stateDirFlagFor } from "../store/stateDir.js";
import type { KeyringExposure } from "./ownerOnly.js";

export class KeyringError extends Error {
  override name = "KeyringError";
}
export class KeyringMissingError extends KeyringError {
  override name = "KeyringMissingError";
  constructor(stateDir: string) {
    // the command with the state directory when it is not the default: it pastes whole
    super(
      `there is no keyring in ${stateDir}; set it up first with: portcullis init${stateDirFlagFor(stateDir)}`,
    );
  }
}
export class KeyringExistsError extends KeyringError {
  override name = "KeyringExistsError";
  constructor(path: string) {
    super(
      `a keyring already exists at ${path}; portcullis init never overwrites it: this state directory is set up (its passphrase unlocks it), or give another one with --state-dir or PORTCULLIS_HOME`,
    );
  }
}
export class WrongPassphraseError extends KeyringError {
  override name = "WrongPassphraseError";
  constructor() {
    super("wrong passphrase: the keyring did not open");
  }
}
/**
 * A keyring others may read whose mode this user cannot change (ownerOnly.ts): not used. Not
 * damaged: `fix` says what makes it usable (doctor's next step).
 */
export class KeyringExposedError extends KeyringError {
  override name = "KeyringExposedError";
  readonly problem: string;
  readonly fix: string;
  constructor(exposure: KeyringExposure) {
    super(exposure.message);
    this.problem = exposure.problem;
    this.fix = exposure.fix;
  }
}
export class KeyringDamagedError extends KeyringError {
  override name = "KeyringDamagedError";
  constructor(
    message: string,
    /** the keyring file, when known: the commands point to `doctor` for it */
    readonly path?: string,
  ) {
    super(message);
  }
}
/**
 * The passphrase opened the keyring, but a part of it does not match the rest: a public half
 * changed, a wrapped key swapped. Something was changed: a check that failed (exit 1), as a wrong
 * passphrase is, where a keyring that cannot be read at all is the environment's (exit 2).
 */
export class KeyringTamperedError extends KeyringDamagedError {
  override name = "KeyringTamperedError";
}

/** The new passphrase is the current one: a change that changes nothing is refused. */
export class SamePassphraseError extends KeyringError {
  override name = "SamePassphraseError";
  constructor() {
    super("the new passphrase is the current one; nothing was changed");
  }
}
