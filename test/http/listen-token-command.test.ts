// A client refused 401 by a `run --listen` front was told "see 'portcullis status' for it": run
// as written, status looks in the default state directory (or the reader's PORTCULLIS_HOME) and
// does not list a front started with another one, so the token was nowhere to be found. The
// refusal now names the command with the front's state directory. A real front, raw requests.
import { afterEach, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";
import { expectRpcError, initializeBody, raw } from "./raw.js";

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it("the 401's sentence names status with the front's state directory, and that command shows the token", async () => {
  const l: Listener = await startListener(fixtureCommand("echo"), {});
  cleanup.push(() => l.close());
  const command = `portcullis status --state-dir ${l.stateDir}`;
  const { authorization: _, ...noToken } = l.headers();
  const none = await raw(l, { headers: noToken, body: initializeBody() });
  expect(none.status).toBe(401);
  expectRpcError(none, new RegExp(`^a bearer token is required \\(see '${command}' for it\\)$`));
  const wrong = await raw(l, {
    headers: l.headers({ authorization: "Bearer not-the-token" }),
    body: initializeBody(),
  });
  expect(wrong.status).toBe(401);
  expectRpcError(
    wrong,
    new RegExp(`^the bearer token given is not this gateway's \\(see '${command}' for it\\)$`),
  );
  // followed (as another shell runs it, without this state directory in its environment): the token
  const status = await runCli(command.split(" ").slice(1));
  expect(status.stdout).toContain(`Authorization: Bearer ${l.token}`);
});
