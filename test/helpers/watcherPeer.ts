// A gateway in front of the watcher fixture (its worker on the gateway's pipe, as under node
// --watch, passing its stdio to the worker) running the lenient fixture: the tests of a worker
// swapped before the server's first answer (first-initialize-rebuilt, first-discover-rebuilt).
import { FIXTURES, NODE } from "./paths.js";
import { type RawGateway, rawGateway } from "./raw.js";

/** The gateway, with debug lines (the supervisor's looks), the lenient fixture given `env`. */
export function watcherPeer(label: string, env: Record<string, string>): RawGateway {
  return rawGateway({
    args: [
      "--label",
      label,
      "--approval",
      "none",
      "--",
      NODE,
      FIXTURES.watcher,
      "--inherit-stdio",
      "--",
      NODE,
      FIXTURES.lenient,
    ],
    env: { ...env, PORTCULLIS_DEBUG: "1" },
  });
}
