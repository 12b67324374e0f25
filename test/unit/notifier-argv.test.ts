// The desktop notifier each platform runs (src/approval/notify.ts, notifierArgv): the texts of a
// notification hold a tool name and a server label, which a server chooses. On macOS they are
// handed to osascript as arguments of a fixed script, never written into the script's source,
// where a quote in a tool's name would end the string and run AppleScript of the server's
// (`do shell script`). This machine has no osascript: the argv is what is checked, and
// test/approval/hostile-notification-markup.test.ts runs Linux's notify-send for real.
import { describe, expect, it } from "vitest";
import { NOTIFY_COMMAND_ENV, NOTIFY_ENV, notificationText, notifierArgv } from "../../src/approval/notify.js";

const HOSTILE_TOOL = 'x" & (do shell script "touch /tmp/pwned") & "';

describe("notifierArgv", () => {
  it("on macOS, runs a fixed osascript program and passes the title and the line as its arguments", () => {
    const { title, body } = notificationText(HOSTILE_TOOL, "shop");
    const argv = notifierArgv(title, body, {}, "darwin")!;
    expect(argv[0]).toBe("osascript");
    const program = argv.slice(1, -2);
    expect(program).toEqual([
      "-e",
      "on run argv",
      "-e",
      "display notification (item 2 of argv) with title (item 1 of argv)",
      "-e",
      "end run",
    ]);
    expect(argv.slice(-2)).toEqual([title, body]);
    expect(program.join("\n")).not.toContain("do shell script");
  });

  it("on Linux, runs notify-send; elsewhere, and with PORTCULLIS_NOTIFY=0, nothing (skipped silently)", () => {
    expect(notifierArgv("t", "b", {}, "linux")?.[0]).toBe("notify-send");
    expect(notifierArgv("t", "b", {}, "win32")).toBeNull();
    expect(notifierArgv("t", "b", { [NOTIFY_ENV]: "0" }, "darwin")).toBeNull();
    expect(notifierArgv("t", "b", { [NOTIFY_ENV]: "0" }, "linux")).toBeNull();
    // a notifier of the human's choosing gets the same two texts as its arguments
    expect(notifierArgv("t", "b", { [NOTIFY_COMMAND_ENV]: "/opt/notify" }, "darwin")).toEqual([
      "/opt/notify",
      "t",
      "b",
    ]);
  });
});
