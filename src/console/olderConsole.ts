/**
 * A console started by an older portcullis, still running after an upgrade: `portcullis console`
 * hands the user its address, and the user would decide in it with the older version's code. Its
 * address file is written once it listens, after it opened the store: the store's schema version
 * then is the one it runs (store/schemaVersion.ts).
 */
import { statSync } from "node:fs";
import { openStoreToRead, upgradedOnOpen } from "../store/db.js";
import { KNOWN_SCHEMA_VERSION, portcullisVersion, schemaVersionAt } from "../store/schemaVersion.js";
import { type ConsoleAddress, consoleAddressPath } from "./address.js";

/** The sentence saying the running console is an older portcullis's, or null when it is not. */
export function olderConsole(stateDir: string, address: ConsoleAddress): string | null {
  let written: string;
  try {
    // a second of slack: a file's time is the kernel's coarse clock, which may lag the one the
    // console's own migrations were stamped with by a tick (a new console is no older one)
    written = new Date(statSync(consoleAddressPath(stateDir)).mtimeMs + 1000).toISOString();
  } catch {
    return null;
  }
  let db: ReturnType<typeof openStoreToRead>;
  try {
    db = openStoreToRead(stateDir);
  } catch {
    return null; // the console that runs has it open; what this one cannot open is not its to say
  }
  try {
    // bringing the store up just now said so already, naming the console among what still runs
    if (upgradedOnOpen(db)) return null;
    const schema = schemaVersionAt(db, written);
    if (schema === null || schema >= KNOWN_SCHEMA_VERSION) return null;
    return (
      `console: warning: that console (pid ${address.pid}) was started by an older portcullis (store schema version ${schema}; ` +
      `this one, ${portcullisVersion()}, knows ${KNOWN_SCHEMA_VERSION}), and decides with that version's code: ` +
      `end it (kill ${address.pid}) and run 'portcullis console' again to run this one.`
    );
  } finally {
    db.close();
  }
}
