// A gateway's row as `portcullis status --json` shows it, read in the test process: a test whose
// subject is not the status command reads the state directory here instead of starting a CLI
// process for it (about 0.2 s of CPU each). A test ABOUT status keeps its CLI process.
import { type GatewayRow, listGateways } from "../../src/gateway/registry.js";
import { openExistingStore } from "../../src/store/db.js";
import { sleep, waitFor } from "./files.js";

/**
 * The state directory's first running gateway's row (listGateways, as status reads it), once
 * `until` holds for it. The row is written as the gateway's state changes, or, where the store was
 * busy then, at its next write: waited for (bounded: `ms`), where a CLI read once and its own
 * start hid that wait. Looked at every 100 ms, not waitFor's 25: each look opens the store, and
 * a connection opened 40 times a second beside a gateway is load of its own
 * (test/helpers/approvals.ts).
 */
export function gatewayRow(
  stateDir: string,
  until: (row: GatewayRow) => boolean = () => true,
  what = "the gateway's row",
  ms = 10_000,
): Promise<GatewayRow> {
  return waitFor(
    async () => {
      const db = openExistingStore(stateDir);
      let row: GatewayRow | undefined;
      try {
        row = listGateways(db)[0];
      } finally {
        db.close();
      }
      if (row !== undefined && until(row)) return row;
      await sleep(75); // with waitFor's own 25 ms
      return null;
    },
    ms,
    what,
  );
}
