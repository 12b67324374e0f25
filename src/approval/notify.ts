/**
 * A desktop notification when a new approval request is made, so the human hears about it
 * wherever they are. Best effort by design: the notifier is spawned detached and never waited
 * for, and a missing or failing one is silently skipped (the request is on stderr, in
 * `portcullis approvals` and in the console anyway).
 *
 * The notification names the tool and the server label, never an argument value: what a
 * desktop shows may be seen by anyone near the screen and is kept by notification daemons.
 *
 *   PORTCULLIS_NOTIFY=0            no notification at all (the test helpers set it)
 *   PORTCULLIS_NOTIFY_COMMAND=PATH run PATH TITLE BODY instead of the platform's notifier
 */
import { spawn } from "node:child_process";
import { safeText } from "../catalog/text.js";

export const NOTIFY_ENV = "PORTCULLIS_NOTIFY";
export const NOTIFY_COMMAND_ENV = "PORTCULLIS_NOTIFY_COMMAND";

/** What a notification says: a title and one line. */
export function notificationText(
  tool: string,
  serverLabel: string,
  /** the gateway's ` --state-dir DIR` when it is not the default (stateDirFlagFor) */
  stateDirFlag = "",
): { title: string; body: string } {
  return {
    title: "portcullis: approval needed",
    body: `tool ${short(tool)} on server ${short(serverLabel)} — portcullis approve --next${stateDirFlag}`,
  };
}

/** The argv that shows a notification on this platform, or null when there is none to run. */
export function notifierArgv(
  title: string,
  body: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string[] | null {
  if (env[NOTIFY_ENV] === "0") return null;
  const custom = env[NOTIFY_COMMAND_ENV];
  if (custom) return [custom, title, body];
  if (platform === "darwin") {
    // The texts are passed as arguments of the script, never spliced into its source.
    return [
      "osascript",
      "-e",
      "on run argv",
      "-e",
      "display notification (item 2 of argv) with title (item 1 of argv)",
      "-e",
      "end run",
      title,
      body,
    ];
  }
  // Notification daemons read the body as markup (<b>, <a href>, <img>): a tool named with an <a>
  // of the server's would put its link in the gateway's own notification. The title is plain text.
  if (platform === "linux") return ["notify-send", "--app-name=portcullis", title, asMarkupText(body)];
  return null;
}

/** `text` as markup that shows it as written: `&`, `<` and `>` escaped. */
function asMarkupText(text: string): string {
  return text.replace(/[&<>]/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : "&gt;"));
}

/**
 * At most one notification per QUIET_MS per gateway: an agent that makes a burst of requests (a
 * thousand distinct calls) would otherwise spawn a notifier for each and bury the human's desktop.
 * The requests of the quiet time are told in one notification at its end, with their number.
 */
export const QUIET_MS = 5_000;
let lastShownAt = -Infinity;
let quieted: { count: number; serverLabel: string; stateDirFlag: string } | null = null;

/** What the notification of `count` requests made during a quiet time says. */
export function batchText(
  count: number,
  serverLabel: string,
  stateDirFlag = "",
): { title: string; body: string } {
  return {
    title: "portcullis: approval needed",
    body: `${count} more approval request${count === 1 ? "" : "s"} (last on server ${short(serverLabel)}) — portcullis approvals${stateDirFlag}`,
  };
}

/**
 * Tells the human of a new request for `tool` on `serverLabel`: at once, or with the others of
 * the quiet time at its end (QUIET_MS). Never throws, never waits.
 */
export function notifyNewRequest(tool: string, serverLabel: string, stateDirFlag = ""): void {
  if (notifierArgv("", "") === null) return;
  const now = performance.now();
  if (quieted === null && now - lastShownAt >= QUIET_MS) {
    lastShownAt = now;
    const { title, body } = notificationText(tool, serverLabel, stateDirFlag);
    show(title, body);
    return;
  }
  if (quieted !== null) {
    quieted = { count: quieted.count + 1, serverLabel, stateDirFlag };
    return;
  }
  quieted = { count: 1, serverLabel, stateDirFlag };
  // not keeping the gateway alive for it: a gateway that ends has nobody left to approve for
  setTimeout(
    () => {
      const q = quieted;
      quieted = null;
      lastShownAt = performance.now();
      if (q === null) return;
      const { title, body } = batchText(q.count, q.serverLabel, q.stateDirFlag);
      show(title, body);
    },
    Math.max(0, QUIET_MS - (now - lastShownAt)),
  ).unref();
}

function show(title: string, body: string): void {
  const argv = notifierArgv(title, body);
  if (!argv) return;
  try {
    const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: "ignore" });
    child.on("error", () => {
      /* no notifier here: skipped */
    });
    child.unref();
  } catch {
    /* skipped */
  }
}

/** Server-provided names are made terminal-safe and kept short. */
function short(s: string): string {
  const t = safeText(s);
  return t.length > 60 ? `${t.slice(0, 59)}…` : t;
}
