// The same rule through a whole gateway: portcullis.json declares `127.1:PORT`, the vault stores
// the secret for `[::ffff:7f00:1]:PORT` (two other spellings of one address), and an unmodified
// Node server fetches `http://127.0.0.1:PORT` (what its URL parser makes of any of them) during
// approved calls. The upstream gets the value; a request to `localhost:PORT`, a name that
// resolves to that very address, gets the placeholder (a name never matches an address). Before
// hosts were compared by value, the declared address got the placeholder too.
import { afterEach, describe, expect, it } from "vitest";
import { newStateDir } from "../helpers/state.js";
import { approvedCall, egressKit, nodeServer, PLACEHOLDER, released, SECRET, text } from "./egress-kit.js";

const k = egressKit();
afterEach(() => k.cleanupAll());

describe("a declared address written another way, through a gateway", () => {
  it("127.1 declared, [::ffff:7f00:1] stored: a fetch of 127.0.0.1 gets the value, localhost the placeholder", async () => {
    const { plain } = await k.upstreams();
    const stateDir = newStateDir();
    const dir = k.project(nodeServer, [`127.1:${plain.port}`]);
    await k.storeHttpSecret(stateDir, `[::ffff:7f00:1]:${plain.port}`);
    await k.unlock(stateDir);
    const gw = await k.gateway(dir, stateDir);
    const seen = new Set<string>();
    const declared = await approvedCall(gw, stateDir, "fetch_url", { url: `${plain.url}/declared` }, seen);
    expect(text(declared)).toBe("200 upstream ok /declared");
    const lookalike = await approvedCall(
      gw,
      stateDir,
      "fetch_url",
      { url: `http://localhost:${plain.port}/lookalike` },
      seen,
    );
    // the name reached the very upstream (it resolves to 127.0.0.1), with the placeholder only
    expect(text(lookalike)).toBe("200 upstream ok /lookalike");
    expect(plain.received.map((r) => [r.path, r.authorization, r.key])).toEqual([
      ["/declared", `Bearer ${SECRET}`, SECRET],
      ["/lookalike", `Bearer ${PLACEHOLDER}`, PLACEHOLDER],
    ]);
    expect(released(plain).map((r) => r.path)).toEqual(["/declared"]);
    expect(gw.stderr()).not.toContain(SECRET);
  });
});
