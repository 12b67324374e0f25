// `portcullis approvals ID` (a user after one request's review) was refused with "takes no
// arguments." and nothing more: not what the command does, nor which one shows a single request.
// Now the sentence says both; the word given is still never echoed (it may be a passphrase
// typed where it does not belong). The real CLI.
import { expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

it("approvals given an argument: refused saying it lists every request and which command shows one", async () => {
  const r = await runCli(["approvals", "01M95VZSJVJ9MFCGWGE3VZPJRH"], { stateDir: newStateDir() });
  expect(r.code).toBe(2);
  expect(r.stderr).toBe(
    "portcullis approvals: takes no arguments; it lists every pending request with its review ('portcullis approve ID' or 'portcullis deny ID' shows one and decides it).\n",
  );
  expect(r.stdout).toBe("");
});
