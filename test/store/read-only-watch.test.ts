// `approvals --watch` over a store it could open only to read from the start (here a read-only
// file): its connection can never write, so what a dead gateway left pending was never closed for
// as long as the watch ran, whatever happened to the file (the retry of a held lock or a full
// disk, test/store/hostile-disk-full-watch.test.ts, is of a connection that can write). What must
// hold: the watch says once what it cannot do and why (the store's sentence, the request not
// closed, that it tries again, the fix); while the file stays read-only nothing is closed and the
// line is not said again; once the file is writable the watch closes the request by itself, says
// so on stderr and in its list. A gateway SIGKILLed with a request pending, the watch run as a
// user whom file modes bind (test/helpers/otherUser.ts): real processes throughout. Its tries
// every second here (PORTCULLIS_WRITABLE_RETRY_MS; every 5 s by default, test/unit/writable-retry).
import { chmodSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { abandonedRequest } from "../helpers/abandonedRequest.js";
import { unprivilegedUser } from "../helpers/otherUser.js";
import { newStateDir } from "../helpers/state.js";
import {
  closedOnceWritable,
  listedButNotClosed,
  stillSaidOnce,
  watchStore,
} from "../helpers/unwritableStoreWatch.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const READ_ONLY = "cannot be written (the file, or its directory, is read-only)";

it("--watch over a store read-only from the start: says once what it cannot close and why; the file writable again, the request is closed and the watch says so", async (ctx) => {
  const stateDir = newStateDir();
  const request = await abandonedRequest(stateDir, cleanup);
  const user = unprivilegedUser([stateDir]);
  if (!user) return ctx.skip("no user whom file modes bind can run the built CLI here");
  const db = join(stateDir, "portcullis.db");
  chmodSync(db, 0o444);
  cleanup.push(() => chmodSync(db, 0o600));

  const w = watchStore(stateDir, cleanup, {
    env: { HOME: stateDir, PORTCULLIS_WRITABLE_RETRY_MS: "1000" },
    as: user.spawn,
  });
  await listedButNotClosed(w, request, READ_ONLY);
  expect(w.err().startsWith(`portcullis approvals: the store ${db} ${READ_ONLY}.`)).toBe(true);
  expect(w.err()).toContain(`the store ${db} ${READ_ONLY}. Read as it is, without writing;`);
  expect(w.err()).toContain(
    "this watch closes none while its store cannot be written, and tries again every 1 s: it closes them once the store can be written, and says so",
  );
  expect(w.err()).toContain(
    `To fix it: make it and its directory writable by their owner (chmod u+w ${db} ${stateDir};`,
  );
  // past two retries (every 1 s, on the watch's 0.5 s ticks) with the file still read-only: nothing
  // closed, the line said once
  await stillSaidOnce(w, READ_ONLY, 2500);

  // the file writable again (nothing written to the store: nothing in it changes to wake the watch)
  chmodSync(db, 0o644);
  await closedOnceWritable(w, request, READ_ONLY);
});
