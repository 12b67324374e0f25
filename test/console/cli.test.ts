// `portcullis console` as a command: its flags and configuration, one console per state
// directory even when two start at once, and the proven window read from portcullis.json.
import { spawn } from "node:child_process";
import { utimesSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readConsoleAddress } from "../../src/console/address.js";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { removeDir, sleep, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import {
  bindLoopback,
  hasIpv6Loopback,
  httpLogin,
  post,
  raw,
  startConsoleProcess,
  stopConsoleOf,
} from "./helpers.js";

describe("portcullis console flags and configuration", () => {
  it("a bad flag or console.proofWindow is a usage error naming it; other config keys still load", async () => {
    const stateDir = newStateDir();
    const cwd = tempDir("portcullis-console-cfg-");
    try {
      const bad = await runCli(["console", "--no-open", "--proof-window", "soon", "--state-dir", stateDir]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--proof-window must be a whole number of seconds/);
      // the range said is the range taken: 0 was refused under "from 0 to 86400"
      for (const idle of ["0", "86401", "soon"]) {
        const r = await runCli(["console", "--no-open", "--idle-timeout", idle, "--state-dir", stateDir]);
        expect(r.code).toBe(2);
        expect(r.stderr).toBe(
          "portcullis console: --idle-timeout must be a whole number of seconds from 1 to 86400.\n",
        );
      }
      const port = await runCli(["console", "--no-open", "--port", "70000", "--state-dir", stateDir]);
      expect(port.code).toBe(2);
      expect(port.stderr).toMatch(/--port must be a port number/);

      const config = join(cwd, "portcullis.json");
      writeFileSync(config, JSON.stringify({ servers: {}, console: { proofWindow: -5 } }));
      const neg = await runCli(["console", "--no-open", "--state-dir", stateDir], { cwd });
      expect(neg.code).toBe(2);
      expect(neg.stderr).toContain(`${config}: console.proofWindow must be a whole number of seconds`);
      writeFileSync(config, JSON.stringify({ servers: {}, console: { proofWindw: 5 } }));
      const typo = await runCli(["console", "--no-open", "--state-dir", stateDir], { cwd });
      expect(typo.code).toBe(2);
      expect(typo.stderr).toContain("console.proofWindw is not a known key (did you mean proofWindow?).");
      // read as run reads it: a key written twice is refused, not taken as the last (here 0,
      // which would ask at every decision); a byte order mark is skipped
      writeFileSync(config, '{"servers": {},\n"console": {"proofWindow": 600,\n"proofWindow": 0}}');
      const twice = await runCli(["console", "--no-open", "--state-dir", stateDir], { cwd });
      expect(twice.code).toBe(2);
      expect(twice.stderr).toBe(
        `portcullis console: ${config}: console has the key "proofWindow" twice (lines 2 and 3); only the last would be read, so remove one.\n`,
      );
      writeFileSync(config, `\uFEFF${JSON.stringify({ servers: {}, console: { proofWindow: -5 } })}`);
      const bom = await runCli(["console", "--no-open", "--state-dir", stateDir], { cwd });
      expect(bom.code).toBe(2);
      expect(bom.stderr).toContain(`${config}: console.proofWindow must be a whole number of seconds`);

      // run loads the same file: a mistyped console section stops it too, before anything is
      // launched (not only on the day the console is opened)
      writeFileSync(
        config,
        JSON.stringify({ servers: { x: { command: NODE, args: ["-e", "0"] } }, console: { proofWindw: 5 } }),
      );
      const misspelt = await runCli(["run", "x", "--state-dir", stateDir], { cwd });
      expect(misspelt.code, misspelt.stderr).toBe(2);
      expect(misspelt.stderr).toContain(
        `${config}: console.proofWindw is not a known key (did you mean proofWindow?).`,
      );
      writeFileSync(
        config,
        JSON.stringify({
          servers: { x: { command: NODE, args: ["-e", "0"] } },
          console: { proofWindow: "5" },
        }),
      );
      const quoted = await runCli(["run", "x", "--state-dir", stateDir], { cwd });
      expect(quoted.code, quoted.stderr).toBe(2);
      expect(quoted.stderr).toContain(`${config}: console.proofWindow must be a whole number of seconds`);

      // The servers of a file with a console block load as before.
      writeFileSync(
        config,
        JSON.stringify({ servers: { x: { command: NODE, args: ["-e", "0"] } }, console: { proofWindow: 0 } }),
      );
      const run = await runCli(["run", "nope", "--state-dir", stateDir], { cwd });
      expect(run.stderr).toMatch(/no server by that label .*; known: x\./);
      expect(run.stderr).not.toMatch(/console is not a known key/);
      expect(readConsoleAddress(stateDir)).toBeNull();
    } finally {
      removeDir(cwd);
      removeDir(stateDir);
    }
  });

  it("--proof-window given: the configuration file found is still read and checked", async () => {
    // The flag wins over console.proofWindow, but a file every other command would refuse was
    // not read at all when it was given: a broken file went unnoticed until the day the console
    // was started without the flag. A section name mistyped at the top level left it on its default.
    const stateDir = newStateDir();
    const cwd = tempDir("portcullis-console-flagcfg-");
    const config = join(cwd, "portcullis.json");
    try {
      const cases: [string, string][] = [
        ['{"servers": {}, "console": {"proofWindow": 60,}}', `${config}: not valid JSON (line 1, column 46`],
        [
          JSON.stringify({ servers: {}, console: { proofWindw: 5 } }),
          `${config}: console.proofWindw is not a known key (did you mean proofWindow?).`,
        ],
        [
          JSON.stringify({ servers: {}, console: { proofWindow: -5 } }),
          `${config}: console.proofWindow must be a whole number of seconds`,
        ],
        [
          JSON.stringify({ servers: {}, consol: { proofWindow: 5 } }),
          `${config}: consol is not a known key (did you mean console?).`,
        ],
        ["[]", `${config}: the top level must be an object`],
      ];
      for (const [text, said] of cases) {
        writeFileSync(config, text);
        for (const flag of [["--proof-window", "60"], []]) {
          const r = await runCli(["console", "--no-open", ...flag, "--state-dir", stateDir], { cwd });
          expect(r.code, `${text} ${flag.join(" ")}: ${r.stderr}`).toBe(2);
          expect(r.stderr).toContain(`portcullis console: ${said}`);
        }
      }
      expect(readConsoleAddress(stateDir)).toBeNull();
    } finally {
      removeDir(cwd);
      removeDir(stateDir);
    }
  });

  it("no keyring, or a port in use: exit 2 with one sentence, and no address left behind", async () => {
    const empty = tempDir("portcullis-console-empty-");
    const stateDir = newStateDir();
    const other = newStateDir();
    try {
      const none = await runCli(["console", "--no-open", "--state-dir", empty]);
      expect(none.code).toBe(2);
      expect(none.stderr).toMatch(/no keyring .*portcullis init/);
      const a = await startConsoleProcess(stateDir);
      try {
        const port = new URL(a.url).port;
        const busy = await runCli(["console", "--no-open", "--port", port, "--state-dir", other]);
        expect(busy.code).toBe(2);
        expect(busy.stderr).toContain(
          `console: --port ${port}: cannot listen there: another program listens on that port`,
        );
        expect(readConsoleAddress(other)).toBeNull();
        // its lock was released: a console on another port starts there
        const b = await startConsoleProcess(other);
        await b.stop();
      } finally {
        await a.stop();
      }
    } finally {
      removeDir(empty);
      removeDir(stateDir);
      removeDir(other);
    }
  });

  it("a console.lock left empty long ago (its console killed before it wrote its owner, a full disk) does not stop every later console", async () => {
    const stateDir = newStateDir();
    try {
      const lock = join(stateDir, "console.lock");
      writeFileSync(lock, "", { mode: 0o600 });
      const longAgo = new Date(Date.now() - 60_000);
      utimesSync(lock, longAgo, longAgo);
      const c = await startConsoleProcess(stateDir);
      await c.stop();
    } finally {
      removeDir(stateDir);
    }
  });

  it("--port N with [::1]:N held by another process: exit 2 naming the port and ::1, nothing published", async () => {
    // localhost may lead a browser to ::1: a console that let someone else hold it there would
    // hand that process the passphrase typed at http://localhost:N.
    if (!(await hasIpv6Loopback())) return;
    const stateDir = newStateDir();
    const squatter = await bindLoopback("::1", 0);
    if (typeof squatter === "string") throw new Error(squatter);
    try {
      const port = String((squatter.address() as AddressInfo).port);
      const busy = await runCli(["console", "--no-open", "--port", port, "--state-dir", stateDir]);
      expect(busy.code, busy.stderr).toBe(2);
      expect(busy.stderr).toContain(
        `console: --port ${port}: cannot listen there on ::1 (IPv6 loopback): another program`,
      );
      expect(readConsoleAddress(stateDir)).toBeNull();
      // its 127.0.0.1 socket was let go as well: that side of the port is free again
      const v4 = await bindLoopback("127.0.0.1", Number(port));
      expect(typeof v4, String(v4)).not.toBe("string");
      if (typeof v4 !== "string") await new Promise((r) => v4.close(r));
    } finally {
      await new Promise((r) => squatter.close(r));
      removeDir(stateDir);
    }
  });

  it("console.proofWindow 0 in portcullis.json: the login proof is not kept, decisions and the audit ask; by default it is kept 5 minutes", async () => {
    const stateDir = newStateDir();
    const cwd = tempDir("portcullis-console-cfg-");
    writeFileSync(join(cwd, "portcullis.json"), JSON.stringify({ servers: {}, console: { proofWindow: 0 } }));
    const c = await startConsoleProcess(stateDir, [], cwd);
    try {
      const s = await httpLogin(c.url);
      expect(s.proofKey).toBeNull();
      const home = await raw(`${c.url}/`, { headers: { Cookie: s.cookie } });
      expect(home.body).toContain("decisions ask for the passphrase");
      const audit = await raw(`${c.url}/audit`, { headers: { Cookie: s.cookie } });
      expect(audit.body).toContain("the chain verifies");
      expect(audit.body).toContain('data-testid="audit-proof"');
    } finally {
      await c.stop();
      removeDir(cwd);
      removeDir(stateDir);
    }
    // …and by default the proof is kept for 5 minutes (the audit opens without asking again).
    const dir = newStateDir();
    const d = await startConsoleProcess(dir);
    try {
      const before = Date.now();
      const s = await httpLogin(d.url);
      const home = await raw(`${d.url}/`, { headers: { Cookie: s.cookie } });
      const elapsedS = Math.ceil((Date.now() - before) / 1000);
      // what is left of the window as the page was drawn: 300 s less the time since the login at
      // most (the window was begun between \`before\` and now), never more than 300 s
      const left = Number(/passphrase proven \((\d+)s left\)/.exec(home.body)?.[1]);
      expect(left).toBeLessThanOrEqual(300);
      expect(left).toBeGreaterThanOrEqual(300 - elapsedS);
      const opened = await post(
        d.url,
        "/audit/open",
        { csrf: s.csrf, proof: s.proofKey! },
        { Cookie: s.cookie },
      );
      expect(opened.status, opened.body).toBe(200);
      expect(opened.body).toContain("<h2>Sessions</h2>");
    } finally {
      await d.stop();
      removeDir(dir);
    }
  });

  it("a session ends after --idle-timeout without a request: the next one is sent to the login page", async () => {
    const stateDir = newStateDir();
    const c = await startConsoleProcess(stateDir, ["--idle-timeout", "1"]);
    try {
      const s = await httpLogin(c.url);
      expect((await raw(`${c.url}/grants`, { headers: { Cookie: s.cookie } })).status).toBe(200);
      await sleep(1500);
      const after = await raw(`${c.url}/grants`, { headers: { Cookie: s.cookie } });
      expect(after.status).toBe(303);
      expect(after.headers.location).toBe("/login?next=%2Fgrants");
      expect((await post(c.url, "/logout", { csrf: s.csrf }, { Cookie: s.cookie })).status).toBe(403);
    } finally {
      await c.stop();
      removeDir(stateDir);
    }
  });

  it("the page fetching itself after a change does not keep an idle session alive", async () => {
    const stateDir = newStateDir();
    const c = await startConsoleProcess(stateDir, ["--idle-timeout", "2"]);
    try {
      const s = await httpLogin(c.url);
      // what the page's script sends when /events says `change` (the store changes all the time
      // while an agent works): never the human, so never a renewal of the session
      // under this console run's own path, named by the page (assetPaths.ts)
      const login = await raw(`${c.url}/login`);
      const src = /<script src="([^"]+)"/.exec(login.body)?.[1];
      expect(src).toMatch(/^\/static\/[0-9a-f]{16}\/console\.js$/);
      const script = await raw(`${c.url}${src}`);
      expect(script.body).toContain('"x-portcullis-refresh": "1"');
      const refresh = { Cookie: s.cookie, "X-Portcullis-Refresh": "1" };
      for (let i = 0; i < 6; i++) {
        await sleep(500);
        await raw(`${c.url}/`, { headers: refresh });
      }
      const after = await raw(`${c.url}/grants`, { headers: { Cookie: s.cookie } });
      expect(after.status).toBe(303);
      expect(after.headers.location).toBe("/login?next=%2Fgrants");
    } finally {
      await c.stop();
      removeDir(stateDir);
    }
  });

  it("two consoles started at once on one state directory: one serves, the other prints its address", async () => {
    const stateDir = newStateDir();
    try {
      const start = () => {
        const child = spawn(NODE, [CLI, "console", "--no-open", "--state-dir", stateDir], {
          env: hostEnv(),
          stdio: ["ignore", "pipe", "pipe"],
        });
        let out = "";
        child.stdout.setEncoding("utf8").on("data", (d: string) => {
          out += d;
        });
        // its stdout read to the end, not only its exit: the address line is read once it exited
        const exit = exitWithOutput(child, [child.stdout]).then(({ code }) => code);
        return { child, exit, out: () => out };
      };
      const a = start();
      const b = start();
      const address = await waitFor(() => readConsoleAddress(stateDir), 15_000, "a console");
      const [server, other] = address.pid === a.child.pid ? [a, b] : [b, a];
      expect(address.pid).toBe(server.child.pid);
      expect(await other.exit).toBe(0);
      expect(other.out().trim()).toBe(
        `the console is already running at ${address.url}/?ticket=${address.ticket}`,
      );
      expect(server.child.exitCode).toBeNull();
    } finally {
      await stopConsoleOf(stateDir);
      removeDir(stateDir);
    }
  });
});
