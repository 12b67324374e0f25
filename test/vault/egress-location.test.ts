// What the proxy takes out of an answer's head: the values released for its request, from
// `Location` only (a redirect the server's client would follow with the value in it).
import { describe, expect, it } from "vitest";
import { headWithoutValues, locationWithoutValues } from "../../src/vault/egress/location.js";

const released = new Map([
  ["api", "tok/en+1 é"],
  ["plain", "abcdef123456"],
]);
const head = (text: string) => Buffer.from(text, "latin1");

describe("a redirect's target without the released values", () => {
  it("the URL-encoded value becomes the URL-encoded placeholder, the value as written the placeholder", () => {
    expect(
      locationWithoutValues(
        `https://www.example/x?key=${encodeURIComponent("tok/en+1 é")}&b=abcdef123456`,
        released,
      ),
    ).toBe("https://www.example/x?key=portcullis-placeholder%3Aapi&b=portcullis-placeholder%3Aplain");
    expect(locationWithoutValues(Buffer.from("/p/tok/en+1 é", "utf8").toString("latin1"), released)).toBe(
      "/p/portcullis-placeholder:api",
    );
    // the upstream's own escapes, in lower case
    expect(locationWithoutValues("/x?key=tok%2fen%2b1%20%c3%a9", released)).toBe(
      "/x?key=portcullis-placeholder%3Aapi",
    );
    expect(locationWithoutValues("/nothing/here", released)).toBe("/nothing/here");
    // both spellings in one header, the upstream's lower-case one after encodeURIComponent's
    expect(
      locationWithoutValues(`/a?k=${encodeURIComponent("tok/en+1 é")}&j=tok%2fen%2b1%20%c3%a9`, released),
    ).toBe("/a?k=portcullis-placeholder%3Aapi&j=portcullis-placeholder%3Aapi");
  });

  it("a value as long as the vault takes (64 KiB) is taken out, not given to a regular expression V8 refuses", () => {
    const value = "é/".repeat(21_000);
    const long = new Map([["big", value]]);
    const location = `https://www.example/x?key=${encodeURIComponent(value).toLowerCase()}&n=1`;
    expect(locationWithoutValues(location, long)).toBe(
      "https://www.example/x?key=portcullis-placeholder%3Abig&n=1",
    );
    expect(locationWithoutValues(`/p/${Buffer.from(value, "utf8").toString("latin1")}`, long)).toBe(
      "/p/portcullis-placeholder:big",
    );
  });

  it("only Location lines of a head, in any letter case; an unchanged head is the same buffer", () => {
    const h = head(
      "HTTP/1.1 302 Found\r\nX-Echo: abcdef123456\r\nLOCATION: /to?k=abcdef123456\r\nContent-Length: 0\r\n\r\n",
    );
    expect(headWithoutValues(h, released).toString("latin1")).toBe(
      "HTTP/1.1 302 Found\r\nX-Echo: abcdef123456\r\nLOCATION: /to?k=portcullis-placeholder%3Aplain\r\nContent-Length: 0\r\n\r\n",
    );
    const none = head("HTTP/1.1 200 OK\r\nLocation: /elsewhere\r\n\r\n");
    expect(headWithoutValues(none, released)).toBe(none);
    expect(headWithoutValues(h, new Map())).toBe(h);
  });
});
