// Loaded into a real gateway with NODE_OPTIONS=--import (and a no-op in the server it launches,
// which inherits the variable): once the file CRASH_TRIGGER appears, it fails the way nothing in
// the gateway catches, on the file's text. CRASH_HOW=parse reads the text as JSON (an uncaught
// SyntaxError, which quotes ten characters either side of where it failed); CRASH_HOW=reject
// rejects a promise nothing handles, with the text whole in its message; CRASH_HOW=warn emits a
// warning with the text whole in its message, then an ordinary warning, and fails nothing.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const CLI = fileURLToPath(new URL("../../../dist/cli/main.cjs", import.meta.url));
const trigger = process.env.CRASH_TRIGGER;
if (process.argv[1] === CLI && process.argv[2] === "run" && trigger) {
  const timer = setInterval(() => {
    if (!existsSync(trigger)) return;
    clearInterval(timer);
    const text = readFileSync(trigger, "utf8");
    if (process.env.CRASH_HOW === "warn") {
      process.emitWarning(`could not use ${text}`);
      process.emitWarning("an ordinary warning, after it");
    } else if (process.env.CRASH_HOW === "reject") Promise.reject(new Error(`could not use ${text}`));
    else JSON.parse(text);
  }, 20);
  timer.unref();
}
