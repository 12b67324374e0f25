// Run before each test file (vitest `setupFiles`). The suite runs files one after another in a
// few long-lived workers (`isolate: false` in vitest.config.ts): what one file leaves in the
// worker must not reach the next. Modules stay loaded (that is the saving), so what is undone
// here is the process-wide state a file may change: the environment, and the temporary
// directories helpers made for it.
import fc from "fast-check";
import { afterAll } from "vitest";
import { removeFileDirs } from "../helpers/fileDirs.js";
import { propertySeed } from "./propertySeed.js";

// fast-check's seed for every property of the file that names none (test/setup/propertySeed.ts)
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: propertySeed() });

const envAtStart = { ...process.env };

afterAll(() => {
  for (const k of Object.keys(process.env)) if (!(k in envAtStart)) delete process.env[k];
  Object.assign(process.env, envAtStart);
  removeFileDirs();
});
