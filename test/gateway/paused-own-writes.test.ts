// A server that writes a file portcullis watches for it as it starts and again as it stops (state
// saved at exit), under onChange restart: each start restarts it, up to the loop limit, then
// supervision pauses ("the server's files keep changing as it starts"). The write its last process
// makes while the last restart stops it is seen while no server runs: reported before the pause
// began (a server that lingers past the watcher's debounce after writing) or just after it (one
// that exits at once). Before the fix either was taken for a new build and started the server
// again at once: the restart loop the pause is there to end, again and again.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { it } from "vitest";
import { removeDir, sleep, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { gatewayRow } from "../helpers/status.js";

// The two run side by side (each with its own directory, gateway and teardown): most of their
// time is spent waiting, for the five starts and stops and for the pause to hold.
it.concurrent.for([
  ["exits at once", 0],
  ["lingers after its write", 1000],
] as [string, number][])(
  "onChange restart: a server that writes a watched file as it starts and as it stops (%s) is paused at the loop limit, and stays paused",
  { timeout: 90_000 },
  async ([_how, lingerMs], { expect, onTestFinished }) => {
    const cleanup: (() => Promise<void> | void)[] = [];
    onTestFinished(async () => {
      for (const c of cleanup.reverse()) await c();
    });
    const dir = tempDir("portcullis-stopwrite-");
    cleanup.push(() => removeDir(dir));
    // Writes gen.json (watched) at every start, and again once its input closes (the gateway
    // stopping it), then exits: at once, or `lingerMs` later (longer than the watcher's debounce, so
    // the write is reported while the stop is still under way).
    writeFileSync(
      join(dir, "server.mjs"),
      [
        'import { writeFileSync } from "node:fs";',
        'const save = (when) => writeFileSync(new URL("./gen.json", import.meta.url), JSON.stringify({ pid: process.pid, when }));',
        'save("start");',
        `await import(${JSON.stringify(pathToFileURL(FIXTURES.echo).href)});`,
        // in place of the echo fixture's own exit at the end of its input
        'process.stdin.removeAllListeners("end");',
        `process.stdin.on("end", () => { save("stop"); setTimeout(() => process.exit(0), ${lingerMs}); });`,
        "",
      ].join("\n"),
    );
    writeFileSync(join(dir, "gen.json"), "{}");
    const gw: RawGateway = rawGateway({
      args: [
        "--label",
        "stopwrite",
        "--approval",
        "none",
        "--on-change",
        "restart",
        "--watch",
        "gen.json",
        "--",
        NODE,
        "server.mjs",
      ],
      cwd: dir,
    });
    cleanup.push(() => gw.close());
    let exited = false;
    void gw.exited.then(() => {
      exited = true;
    });
    const told = (e: Error): never => {
      throw new Error(`${e.message}; the gateway's stderr ends:\n${gw.stderr().slice(-4000)}`);
    };
    await gw.initialize();
    await waitFor(
      () =>
        /the server's files keep changing as it starts \(5 restarts within 30 s.*supervision paused/.test(
          gw.stderr(),
        ),
      60_000,
      "the pause after the restarts",
    ).catch(told);
    // (from the pause line: a resume decided as the pause began is logged right after it)
    const paused = gw.stderr().search(/supervision paused/);
    const restarts = () => (gw.stderr().match(/; restart\)/g) ?? []).length;
    const atPause = restarts();
    // Nothing runs now, so nothing writes gen.json: the pause holds. (A resume, when there is one,
    // follows the pause at once: the watcher's debounce, a capture, then the launch.)
    await sleep(2000);
    const since = gw.stderr().slice(paused);
    expect(since, `the gateway's stderr since the pause:\n${since}`).not.toMatch(/starting the server again/);
    expect(restarts()).toBe(atPause);
    expect((await gatewayRow(gw.stateDir, (r) => r.state === "paused", "the row to say paused")).state).toBe(
      "paused",
    );
    expect(exited).toBe(false);
  },
);
