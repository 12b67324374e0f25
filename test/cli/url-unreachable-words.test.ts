// `run --url URL` to a server that cannot be reached stops at start (exit 2) with one sentence
// naming the URL; why was node's own text ("connect ECONNREFUSED 127.0.0.1:PORT", "getaddrinfo
// ENOTFOUND host"), which asks the user to know errno and getaddrinfo. Now in words, the code as a
// suffix, as for a file or a port named on the command line (README, "Commands"). Real CLI.
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

/** A loopback port nothing listens on: one just let go. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

describe("run --url to a server that cannot be reached", () => {
  it("says why in words, with the system's code", async () => {
    const stateDir = newStateDir();
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}/mcp`;
    const refused = await runCli(["run", "--url", url], { stateDir, input: "" });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      `portcullis run: cannot reach ${url}: nothing listens at its host and port; start the server, or check the URL (ECONNREFUSED).\n`,
    );
    // a name no DNS has (RFC 6761: .invalid); a machine without DNS says so instead
    const unknown = await runCli(["run", "--url", "https://mcp.example.invalid/mcp"], {
      stateDir,
      input: "",
    });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(
      /^portcullis run: cannot reach https:\/\/mcp\.example\.invalid\/mcp: its host name (does not resolve \(no such name in DNS\); check the URL \(ENOTFOUND\)|could not be resolved just now .*\(EAI_AGAIN\))\.\n$/,
    );
    expect(unknown.stderr).not.toContain("getaddrinfo");
  });
});
