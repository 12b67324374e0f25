import { findConfig } from "../config/config.js";
import {
  type ConsoleAddress,
  clearConsoleAddress,
  consoleAddressPath,
  humanLink,
  readConsoleAddress,
  writeConsoleAddress,
} from "../console/address.js";
import {
  DEFAULT_PROOF_WINDOW_S,
  type PerCallProof,
  perCallProofProblem,
  proofWindowProblem,
  readConsoleConfig,
} from "../console/config.js";
import { openBrowser, takeConsoleLock, waitForConsole } from "../console/launch.js";
import { olderConsole } from "../console/olderConsole.js";
import { LoopbackPortsBusy, startConsole } from "../console/server.js";
import { notPortcullisPhrase, runsPortcullisCommand } from "../identity/proc.js";
import { KeyringMissingError } from "../keyring/keyringErrors.js";
import { keyringExists } from "../keyring/keyringRead.js";
import { existingStateDir, quotedCommand } from "../store/stateDir.js";
import { listenProblem } from "../util/errno.js";
import { stderrLogger } from "../util/log.js";
import { leadingZero, parse, wholeNumber } from "./args.js";
import { EXIT_OK, EXIT_USAGE, UsageError } from "./errors.js";

export const CONSOLE_HELP = `usage: portcullis console [--port N] [--no-open] [--proof-window SECONDS]
                         [--per-call-proof window|fresh] [--idle-timeout SECONDS]
                         [--state-dir DIR]

The local web console: pending approval requests with their review, decisions,
servers, catalog revisions, grants, the audit. It listens on the loopback only
(127.0.0.1 and ::1, one port) and shows nothing before the keyring's passphrase
is typed.
  --port N                listen on this port (default: any free port)
  --no-open               do not open a browser
  --proof-window SECONDS  how long a passphrase proof lets decisions be a click
                          (default ${DEFAULT_PROOF_WINDOW_S}; 0 = every decision asks; config console.proofWindow)
  --per-call-proof window|fresh
                          approving a call of a per-call tool: "window" (default: a
                          held proof makes it a click) or "fresh" (the passphrase each
                          time); config console.perCallProof
  --idle-timeout SECONDS  a console session ends after this long without a request (default 900)
  --on-demand             how a gateway starts it (docs/console.md): it stops by itself after an
                          hour nobody used it, or once its state directory's keyring is gone
One console per state directory: when one is running, its address is printed
(with --port N, a console running on another port is an error saying where it runs).`;

function seconds(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = wholeNumber("console", flag, v);
  const problem = proofWindowProblem(n);
  if (problem) throw new UsageError(`console: --${flag} ${problem}.`);
  return n;
}

/**
 * A console asked for on port N while one runs for this state directory on another port: the
 * port asked for is not given, so saying "already running" with exit 0 read as done. There is one
 * console per state directory (its lock and address file), so the running one is named, with
 * what to do: use it, or stop it and ask again.
 */
function elsewhere(address: ConsoleAddress, port: number, stateDir: string): void {
  if (port === 0) return;
  const running = Number(new URL(address.url).port);
  if (running === port) return;
  throw new UsageError(
    `console: a console is already running for ${stateDir} at ${address.url} (pid ${address.pid}), not on port ${port}; ` +
      // console.json names any pid its writer chose: one that is not a console is not to be ended
      (runsPortcullisCommand(address.pid, "console", address.startTime)
        ? `there is one console per state directory: use that one, or stop it (kill ${address.pid}) and run ${quotedCommand(`console --port ${port}`, stateDir)} again.`
        : `its address file's ${notPortcullisPhrase(address.pid, "console")}; remove ${consoleAddressPath(stateDir)} if no console of yours runs, then run ${quotedCommand(`console --port ${port}`, stateDir)} again.`),
  );
}

export async function consoleCommand(args: string[]): Promise<number> {
  const { values, positionals } = parse("console", args, {
    port: { type: "string" },
    "no-open": { type: "boolean" },
    "proof-window": { type: "string" },
    "per-call-proof": { type: "string" },
    "idle-timeout": { type: "string" },
    "on-demand": { type: "boolean" },
    "state-dir": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    process.stdout.write(`${CONSOLE_HELP}\n`);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError("console: takes no arguments.");
  let port = 0;
  if (values.port !== undefined) {
    // as run --listen refuses `:08080`: a port is written as the number it is
    if (/^0[0-9]{1,4}$/.test(values.port) && Number(values.port) > 0)
      throw new UsageError(`console: ${leadingZero("--port", "port")}.`);
    port = /^\d{1,5}$/.test(values.port) ? Number(values.port) : -1;
    if (port < 1 || port > 65535) throw new UsageError(`console: --port must be a port number 1-65535.`);
  }
  const configFile = findConfig(process.cwd());
  // The file is read and checked even when the flag wins over it, as every command checks the
  // configuration it finds: with --proof-window given, a broken file went unnoticed until the
  // day the console was started without the flag.
  const flagWindow = seconds("proof-window", values["proof-window"]);
  const flagPerCall = values["per-call-proof"];
  const perCallFlagProblem = flagPerCall === undefined ? null : perCallProofProblem(flagPerCall);
  if (perCallFlagProblem) throw new UsageError(`console: --per-call-proof ${perCallFlagProblem}.`);
  const fromFile = configFile ? readConsoleConfig(configFile) : {};
  const proofWindow = flagWindow ?? fromFile.proofWindow;
  const perCallProof: PerCallProof =
    (flagPerCall as PerCallProof | undefined) ?? fromFile.perCallProof ?? "window";
  const idleText = values["idle-timeout"];
  const idle = idleText === undefined ? 900 : wholeNumber("console", "idle-timeout", idleText);
  // its own range, said whole: 0 is no timeout a session could live under (NaN: not digits)
  if (!(idle >= 1 && idle <= 86400))
    throw new UsageError("console: --idle-timeout must be a whole number of seconds from 1 to 86400.");
  const stateDir = existingStateDir(values["state-dir"]);
  // Nothing could prove the human without a keyring: the console would be a locked door.
  if (!keyringExists(stateDir))
    // no period: the sentence ends with the init to paste (keyringEnding)
    throw new UsageError(`console: ${new KeyringMissingError(stateDir).message}`);
  // The printed and opened link carries the console's ticket: a browser that came by it is
  // never made to wait by anyone else's wrong passphrases (src/console/ticket.ts).
  const show = (address: ConsoleAddress, already: boolean) => {
    if (already) elsewhere(address, port, stateDir);
    const link = humanLink(address);
    process.stdout.write(`${already ? "the console is already running at" : "console:"} ${link}\n`);
    if (!values["no-open"]) openBrowser(link);
  };

  const existing = readConsoleAddress(stateDir);
  if (existing) {
    show(existing, true);
    // one an older portcullis started, running since before an upgrade: said, with what to do
    const older = olderConsole(stateDir, existing);
    if (older) process.stderr.write(`portcullis ${older}\n`);
    return EXIT_OK;
  }
  const release = takeConsoleLock(stateDir);
  if (!release) {
    // Another console is starting for this state directory: use it.
    const address = await waitForConsole(stateDir, 10_000);
    if (!address)
      throw new UsageError(`console: another console holds ${stateDir}/console.lock but did not start.`);
    show(address, true);
    return EXIT_OK;
  }
  const log = stderrLogger("console");
  // A store file deleted or replaced under the console stops it (exit 2, the store left open);
  // the stop is set once the console runs, and the loss may come first.
  let storeLost = false;
  let stopForLoss: (() => void) | null = null;
  let running: Awaited<ReturnType<typeof startConsole>>;
  try {
    running = await startConsole({
      stateDir,
      port,
      idleMs: idle * 1000,
      proofWindowMs: (proofWindow ?? DEFAULT_PROOF_WINDOW_S) * 1000,
      perCallProof,
      log,
      onStoreLost: () => {
        storeLost = true;
        stopForLoss?.();
      },
    });
  } catch (e) {
    release();
    if (e instanceof LoopbackPortsBusy)
      throw new UsageError(`console: ${e.message}; choose one with --port.`);
    const code = (e as NodeJS.ErrnoException).code;
    // A port given that cannot be listened on (taken, or below 1024 for a user without the
    // privilege): said in words with the system's code, as run --listen says it, never a stack.
    if (port !== 0 && typeof code === "string" && code.startsWith("E")) {
      // The console holds ::1 too (localhost may lead there): someone else on it is a refusal.
      const where = (e as { address?: string }).address === "::1" ? " on ::1 (IPv6 loopback)" : "";
      throw new UsageError(`console: --port ${port}: cannot listen there${where}: ${listenProblem(code)}.`);
    }
    throw e;
  }
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (why: string) => {
      if (stopping) return;
      stopping = true;
      log.info(`console stopping (${why})`);
      clearConsoleAddress(stateDir);
      release();
      running.close().then((closed) => resolve(closed ? EXIT_OK : EXIT_USAGE));
    };
    for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(sig, () => stop(sig));
    // Published only once a signal would remove it again.
    show(writeConsoleAddress(stateDir, running.url, running.ticket), false);
    stopForLoss = () => stop("a file of its store changed under it");
    if (storeLost) stopForLoss();
    if (values["on-demand"]) {
      // Started by a gateway: it goes away after an hour in which nobody used it, or at once
      // when its state directory is removed (a throwaway one: tests, the demo, drills).
      const timer = setInterval(() => {
        const why = !keyringExists(stateDir)
          ? "its state directory is gone"
          : Date.now() - running.lastActivity() > 3600_000
            ? "unused for an hour"
            : null;
        if (why) {
          clearInterval(timer);
          stop(why);
        }
      }, 2000);
      timer.unref();
    }
  });
}
