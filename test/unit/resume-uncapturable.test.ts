// The change that ends a pause (a crash loop under a watcher) is reported against the generation
// that crashed (`changed`: the audit's artifact_changed), before the new epoch comes up. When the
// capture made for that report failed (a build caught half-written: the command gone for a
// moment) and the launch that followed captured fine, the change was swallowed: a new epoch with
// no record of the change that brought it.
import { chmodSync, existsSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import type { Logger } from "../../src/util/log.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { deferredCleanup, quiet, supervisorIn } from "../helpers/supervisor.js";

const defer = deferredCleanup();

function writeServer(file: string, body: string): void {
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
}

it("a change while paused whose first capture fails is still reported against the crashed generation, before the new epoch", async () => {
  const dir = tempDir("pc-resume-uncapturable-");
  defer(() => removeDir(dir));
  const server = join(dir, "server");
  writeServer(server, "exit 1"); // crashes at every start
  // The spawn's environment is asked for at the start of every launch, after the resume's own
  // capture and before the launch's: the moment a build caught half-written completes.
  let fixAtNextSpawn = false;
  const warnings: string[] = [];
  const { sup, ups } = supervisorIn(
    dir,
    { serverLabel: "half-written", command: "./server", args: [] },
    {
      waitForChangeOnCrashLoop: true,
      log: { ...quiet, warn: (m: string) => void warnings.push(m) } as Logger,
      spawnEnv: async () => {
        if (fixAtNextSpawn && !existsSync(server)) {
          fixAtNextSpawn = false;
          writeServer(server, "exec sleep 1000");
        }
        return { env: {}, credentials: { released: [], withheld: [] } };
      },
    },
  );
  defer(() => sup.shutdown());
  const seen: string[] = [];
  const changes: { paths: string[]; parts: string[]; epoch: string }[] = [];
  sup.on("changed", (paths, parts, _next, gen) => {
    changes.push({ paths, parts, epoch: gen.epoch });
    seen.push(`changed ${gen.epoch}`);
  });
  sup.on("up", (gen) => seen.push(`up ${gen.epoch}`));
  await sup.start();
  await waitFor(() => sup.paused, 15_000, "the crash loop to pause supervision");
  const crashed = sup.current!;
  expect(crashed.alive).toBe(false);

  // the command is gone when the resume captures; back (another build) when the launch does
  fixAtNextSpawn = true;
  unlinkSync(server);
  const next = await waitFor(() => ups[ups.indexOf(crashed) + 1], 15_000, "the server started again");
  expect(next.reason).toBe("restart");
  expect(sup.paused).toBeNull();
  expect(fixAtNextSpawn).toBe(false);

  const reported = changes.find((c) => c.epoch === crashed.epoch);
  expect(reported, "a change reported against the crashed generation").toBeDefined();
  expect(reported!.paths).toEqual(["server"]);
  expect(reported!.parts.length).toBeGreaterThan(0);
  expect(seen.indexOf(`changed ${crashed.epoch}`)).toBeLessThan(seen.indexOf(`up ${next.epoch}`));
  // the capture that failed is said, not swallowed
  expect(warnings.some((w) => /cannot read the server.s identity after server changed/.test(w))).toBe(true);
});
