/**
 * A console started by an older portcullis, still running after an upgrade: `portcullis console`
 * hands the user its address, and the user would decide in it with the older version's code. Its
 * address file is written once it listens, after it opened the store, and says the schema version
 * it runs; one a portcullis before that recording wrote says none, and the store's schema version
 * when the file was written is the one it runs (store/schemaVersion.ts).
 */
import { statSync } from "node:fs";
import { notPortcullisPhrase, runsPortcullisCommand } from "../identity/proc.js";
import { openStoreToRead, upgradedOnOpen } from "../store/db.js";
import {
  KNOWN_SCHEMA_VERSION,
  olderThan,
  type ProcessSchema,
  portcullisVersion,
  schemaPhrase,
  schemaVersionAt,
} from "../store/schemaVersion.js";
import { type ConsoleAddress, consoleAddressPath } from "./address.js";

/** The sentence saying the running console is an older portcullis's, or null when it is not. */
export function olderConsole(stateDir: string, address: ConsoleAddress): string | null {
  let db: ReturnType<typeof openStoreToRead>;
  try {
    db = openStoreToRead(stateDir);
  } catch {
    return null; // the console that runs has it open; what this one cannot open is not its to say
  }
  try {
    // bringing the store up just now said so already, naming the console among what still runs
    if (upgradedOnOpen(db)) return null;
    // as the console recorded it (deny first: an unreadable record counts as older)
    if (address.schemaVersion !== undefined) return sentence(stateDir, address, address.schemaVersion);
    // a console of a portcullis before the recording: the store's version when it wrote its file
    let written: string;
    try {
      // a second of slack: a file's time is the kernel's coarse clock, which may lag the one the
      // console's own migrations were stamped with by a tick (a new console is no older one)
      written = new Date(statSync(consoleAddressPath(stateDir)).mtimeMs + 1000).toISOString();
    } catch {
      return null;
    }
    return sentence(stateDir, address, schemaVersionAt(db, written));
  } finally {
    db.close();
  }
}

function sentence(stateDir: string, address: ConsoleAddress, schema: ProcessSchema): string | null {
  if (!olderThan(schema, KNOWN_SCHEMA_VERSION)) return null;
  return (
    `console: warning: that console (pid ${address.pid}) was started by an older portcullis (${schemaPhrase(schema)}; ` +
    `this one, ${portcullisVersion()}, knows ${KNOWN_SCHEMA_VERSION}), and decides with that version's code: ` +
    // console.json names any pid its writer chose: one that is not a console is not to be ended
    (runsPortcullisCommand(address.pid, "console", address.startTime)
      ? `end it (kill ${address.pid}) and run 'portcullis console' again to run this one.`
      : `its address file's ${notPortcullisPhrase(address.pid, "console")}; remove ${consoleAddressPath(stateDir)} if no console of yours runs, and run 'portcullis console' again.`)
  );
}
