// A declared host in portcullis.json (`credentials.*.hosts`) is checked where it is loaded: one
// that cannot be a host (empty, blanks, a scheme, a path, userinfo, a name ending in a number that
// is no IPv4 address) is refused naming the file, the server and the key; one written another way
// than requests are matched in is loaded in that form (`127.1` is 127.0.0.1). The loader in
// process for each case, and `run` once through the real CLI (exit 2, one line naming all three).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfigFile } from "../../src/config/config.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

function configWith(hosts: unknown[]): string {
  const file = join(tempDir("portcullis-hosts-"), "portcullis.json");
  writeFileSync(
    file,
    JSON.stringify({
      servers: {
        inventory: {
          command: "node",
          credentials: { API_KEY: { secret: "inventory-api", deliver: "http", hosts } },
        },
      },
    }),
  );
  return file;
}

describe("declared hosts at config load", () => {
  it.each([
    ["", "is not HOST or HOST:PORT"],
    [" api.example.com", "is not a DNS name or an IP address"],
    ["api example.com", "is not a DNS name or an IP address"],
    ["https://api.example.com", "is not HOST or HOST:PORT"],
    ["api.example.com/v1", "is not a DNS name or an IP address"],
    ["user@api.example.com", "is not a DNS name or an IP address"],
    ["api.example.com..", "is not a DNS name or an IP address"],
    ["1.2.3.999", "is not a DNS name or an IP address"],
    ["example.123", "is not a DNS name or an IP address"],
    ["[127.0.0.1]", "is not an IPv6 address"],
  ])("refuses %j, naming the file, the server and the key", (host, problem) => {
    const file = configWith(["api.example.com", host]);
    expect(() => loadConfigFile(file)).toThrow(
      `${file}: servers.inventory.credentials.API_KEY.hosts[1] ${JSON.stringify(host)} ${problem}`,
    );
  });

  it("loads an address in the form requests are matched in", () => {
    const file = configWith([
      "127.1:8443",
      "[::FFFF:127.0.0.1]",
      "API.Example.com.",
      "[0:0:0:0:0:0:0:1]:9000",
    ]);
    expect(loadConfigFile(file).get("inventory")?.credentialSpecs[0]?.hosts).toEqual([
      "127.0.0.1:8443",
      "127.0.0.1",
      "api.example.com",
      "[::1]:9000",
    ]);
  });

  it("run: exit 2, one line naming the file, the server and the key", async () => {
    const file = configWith(["0x7f.0.0.1", "1.2.3.999:443"]);
    const r = await runCli(["run", "inventory", "--config", file], { stateDir: newStateDir() });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual([
      `portcullis run: ${file}: servers.inventory.credentials.API_KEY.hosts[1] "1.2.3.999:443" is not a DNS name or an IP address.`,
    ]);
  });
});
