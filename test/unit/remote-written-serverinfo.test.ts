// A remote record's serverInfo as shown to people (`status`, the approval review): each number the
// record keeps exactly (`remote.writtenNumbers`, src/supervisor/remoteEpoch.ts) written with its
// exact value in place of what JSON.parse read; in a record read back from the store, a number
// beyond the double range (read as Infinity) is null, and is shown as the server wrote it too.
import { expect, it } from "vitest";
import { writtenServerInfo } from "../../src/identity/index.js";

it("shows each kept number exactly, where JSON.parse read it, and nothing else changed", () => {
  // as the store gives it back: JSON.parse's reading of what the server wrote, Infinity as null
  const stored = JSON.parse(
    JSON.stringify(
      JSON.parse('{"build":9007199254740993,"big":1e400,"a":[1e-400],"n":null,"k]=":12345678901234567001}'),
    ),
  );
  expect(
    writtenServerInfo({
      serverInfo: stored,
      writtenNumbers: [
        '["serverInfo","a",0]=1e-400',
        '["serverInfo","big"]=1e400',
        '["serverInfo","build"]=9007199254740993e0',
        '["serverInfo","k]="]=12345678901234567001e0',
        '["capabilities","build"]=1e999',
      ],
    }),
  ).toBe('{"build":9007199254740993,"big":1e400,"a":[1e-400],"n":null,"k]=":12345678901234567001}');
  // an entry that does not name the value where it is read: the value as read
  expect(
    writtenServerInfo({
      serverInfo: { build: 5 },
      writtenNumbers: ['["serverInfo","build"]=9007199254740993e0'],
    }),
  ).toBe('{"build":5}');
  expect(writtenServerInfo({ serverInfo: { name: "plain" } })).toBe('{"name":"plain"}');
  expect(writtenServerInfo({ serverInfo: null })).toBeNull();
});
