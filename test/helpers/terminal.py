# Runs a command on a pseudo-terminal of its own (its controlling terminal: /dev/tty), as a person
# at a terminal does: waits for each prompt, then types its bytes. For the tests of what
# portcullis reads from the terminal (src/cli/passphrase.ts), which no pipe can stand in for.
# argv[1]: JSON {"argv": [...], "steps": [{"await": TEXT, "send": HEX}], "timeout": SECONDS}.
# Prints JSON {"output": what the terminal showed (stdout and stderr both), "code": exit code,
# or null when the command was still running at the timeout (then killed)}.
import json
import os
import pty
import select
import signal
import sys
import time

spec = json.loads(sys.argv[1])
deadline = time.monotonic() + spec.get("timeout", 20)
pid, fd = pty.fork()
if pid == 0:
    os.execvp(spec["argv"][0], spec["argv"])

output = b""


def read_some() -> bool:
    """Reads what the terminal shows; False once the command closed it or the time is up."""
    global output
    left = deadline - time.monotonic()
    if left <= 0:
        return False
    ready, _, _ = select.select([fd], [], [], left)
    if not ready:
        return False
    try:
        data = os.read(fd, 4096)
    except OSError:  # EIO: every process holding the terminal has ended
        return False
    output += data
    return len(data) > 0


seen = 0
for step in spec["steps"]:
    want = step["await"].encode()
    while output.find(want, seen) == -1:
        if not read_some():
            break
    else:
        seen = output.find(want, seen) + len(want)
        os.write(fd, bytes.fromhex(step["send"]))
        continue
    break

while read_some():
    pass
code = None
done, status = os.waitpid(pid, os.WNOHANG)
if done == 0 and time.monotonic() >= deadline:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
else:
    if done == 0:
        _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
print(json.dumps({"output": output.decode("utf-8", "replace"), "code": code}))
