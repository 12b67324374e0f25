// `approvals --watch` while the store's disk is full: it closes what a dead gateway left pending
// before each read, best effort, and the file system refuses that write. It lists the request as
// pending and says so in one line (the store's sentence, the request not closed, the fix:
// test/store/hostile-disk-full-lists.test.ts). Freeing space writes nothing to the store, so
// nothing woke the watch: the close was tried again only once the store changed, and the request
// stayed listed as pending meanwhile. What must hold: the line is said once while the disk stays
// full; once space is back the watch closes the request by itself at a tick, says so on stderr
// and in its list (`{"change":"closed","state":"expired"}`), as it does once a held lock is let go
// (test/cli/approvals-watch-close-locked.test.ts). A 4 MiB tmpfs mounted for the test (root only:
// where mount is refused, the test skips and says why), a gateway SIGKILLed with a request pending
// (its -shm left, so the store opens to write and the closing's write is what the disk refuses),
// the watch: real processes throughout.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { abandonedRequest } from "../helpers/abandonedRequest.js";
import { smallDisk } from "../helpers/smallDisk.js";
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

const FULL = "cannot be written: the disk is full";

it("--watch on a full disk: the not-closed line said once while it is full; space back, the request is closed at a tick and the watch says so", async (ctx) => {
  const disk = smallDisk(cleanup);
  if (typeof disk === "string") return ctx.skip(disk);
  const { stateDir } = disk;
  const request = await abandonedRequest(stateDir, cleanup);
  expect(existsSync(join(stateDir, "portcullis.db-shm"))).toBe(true);
  disk.fill();

  const w = watchStore(stateDir, cleanup);
  await listedButNotClosed(w, request, FULL);
  expect(w.err()).toMatch(
    new RegExp(`^portcullis approvals: the store ${join(stateDir, "portcullis.db")} ${FULL}\\. `),
  );
  // several ticks of the watch (one every 500 ms, each trying the close again) with the disk still
  // full and nothing else changing: the line is not said again, and nothing is closed
  await stillSaidOnce(w, FULL, 2500);

  // space back (nothing written to the store: nothing in it changes to wake the watch)
  disk.free();
  await closedOnceWritable(w, request, FULL);
});
