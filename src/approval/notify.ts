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
  if (platform === "linux") return ["notify-send", "--app-name=portcullis", title, body];
  return null;
}

/** Shows the notification of a new request for `tool` on `serverLabel`; never throws, never waits. */
export function notifyNewRequest(tool: string, serverLabel: string, stateDirFlag = ""): void {
  const { title, body } = notificationText(tool, serverLabel, stateDirFlag);
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
