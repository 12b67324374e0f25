// What `approvals --watch` says of a store it could open only to read names how often it tries to
// open it to write again: every 5 s, or PORTCULLIS_WRITABLE_RETRY_MS (which the test of the watch,
// test/store/read-only-watch, sets to wait out its tries in less time), the value it then waits.
import { afterEach, describe, expect, it } from "vitest";
import { WRITABLE_RETRY_MS, watchCannotCloseNote, writableRetryMs } from "../../src/cli/writableAgain.js";
import { StoreError } from "../../src/store/storeError.js";

const NAME = "PORTCULLIS_WRITABLE_RETRY_MS";
const readOnly = new StoreError("/state/portcullis.db", "is read-only", "read-only", "read-only");

describe("the watch's tries to write again", () => {
  afterEach(() => {
    delete process.env[NAME];
  });

  it("every 5 s by default, and says so", () => {
    delete process.env[NAME];
    expect(WRITABLE_RETRY_MS).toBe(5_000);
    expect(writableRetryMs()).toBe(5_000);
    expect(watchCannotCloseNote(readOnly, "/state")).toContain("and tries again every 5 s:");
  });

  it("every PORTCULLIS_WRITABLE_RETRY_MS when set, and says that; a value it cannot use leaves 5 s", () => {
    process.env[NAME] = "1000";
    expect(writableRetryMs()).toBe(1_000);
    expect(watchCannotCloseNote(readOnly, "/state")).toContain("and tries again every 1 s:");
    process.env[NAME] = "1e3";
    expect(writableRetryMs()).toBe(5_000);
    expect(watchCannotCloseNote(readOnly, "/state")).toContain("and tries again every 5 s:");
  });
});
