// The passkey origin every ceremony names must be the origin a browser writes into its answer
// (clientDataJSON.origin): the URL parser's serialisation, which leaves out http's default port.
// On port 80 an origin written `http://localhost:80` would match no answer, and passkeys could
// never be registered or used there.
import { describe, expect, it } from "vitest";
import { passkeyOrigin } from "../../src/console/passkeyOrigin.js";

describe("passkeyOrigin", () => {
  it("is the origin a browser serialises: no port on 80, the port elsewhere", () => {
    expect(passkeyOrigin(80)).toBe("http://localhost");
    expect(passkeyOrigin(8788)).toBe("http://localhost:8788");
    expect(passkeyOrigin(443)).toBe("http://localhost:443");
    for (const port of [1, 80, 1024, 8788, 65535])
      expect(passkeyOrigin(port)).toBe(new URL(`http://localhost:${port}/passkeys`).origin);
  });
});
