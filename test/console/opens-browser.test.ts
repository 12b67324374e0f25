// `portcullis console` opens the human's browser on the link it prints (its ticket included, so
// that browser is never made to wait by anyone else's wrong passphrases), whether it starts the
// console or finds one running; `--no-open` opens nothing. The opener is the platform's
// (`xdg-open`, `open` on macOS), here a script first on PATH that writes down how it was run.
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { describe, expect, it } from "vitest";
import { readConsoleAddress } from "../../src/console/address.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";
import { startConsoleProcess } from "./helpers.js";

/** A directory holding `xdg-open` and `open` that append "TAG URL…" to `log`, one line a run. */
function recordingOpeners(dir: string, log: string): void {
  const script = `#!/bin/sh\nprintf '%s %s\\n' "$OPENER_TAG" "$*" >> '${log}'\n`;
  for (const name of ["xdg-open", "open"]) {
    writeFileSync(join(dir, name), script);
    chmodSync(join(dir, name), 0o755);
  }
}

const opened = (log: string) =>
  existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean) : [];

describe("portcullis console opens the browser", () => {
  it("on the printed link, ticket included, when it starts one and when one already runs; --no-open opens nothing", async () => {
    const stateDir = newStateDir();
    const bin = tempDir("portcullis-opener-");
    const log = join(bin, "opened.log");
    recordingOpeners(bin, log);
    const path = `${bin}${delimiter}${process.env.PATH ?? ""}`;
    // the console started without --no-open
    const started = await startConsoleProcess(
      stateDir,
      [],
      undefined,
      { PATH: path, OPENER_TAG: "first" },
      [],
      true,
    );
    try {
      const address = readConsoleAddress(stateDir)!;
      const printed = await waitFor(
        () => /^console: (\S+)$/m.exec(started.output())?.[1],
        15_000,
        "the console's printed link",
      );
      expect(printed).toContain(address.url);
      expect(printed).toContain(address.ticket);
      expect(await waitFor(() => opened(log)[0], 15_000, "the opener to run")).toBe(`first ${printed}`);

      // a second console command finds the running one: --no-open prints it and opens nothing
      const quiet = await runCli(["console", "--no-open", "--state-dir", stateDir], {
        env: { PATH: path, OPENER_TAG: "quiet" },
      });
      expect(quiet.code).toBe(0);
      expect(quiet.stdout).toContain(`the console is already running at ${printed}`);
      // without it, the running console's link is opened
      const again = await runCli(["console", "--state-dir", stateDir], {
        env: { PATH: path, OPENER_TAG: "again" },
      });
      expect(again.code).toBe(0);
      await waitFor(() => opened(log).length >= 2, 15_000, "the second opener run");
      expect(opened(log)).toEqual([`first ${printed}`, `again ${printed}`]);
    } finally {
      await started.stop();
      removeDir(stateDir);
      removeDir(bin);
    }
  });
});
