"""Runs a command on a new pseudo-terminal and answers its prompts, for the CLI tests.

Reads {"argv": [...], "env": {...}, "inputs": ["answer\r", ...]} as JSON on standard
input. Each input is typed once the command has printed a new prompt (output ending in
":"). Prints {"status": exit status, "output": what the terminal showed} as JSON.
"""
import json, os, pty, select, signal, sys, time

spec = json.load(sys.stdin)
pid, fd = pty.fork()
if pid == 0:
    os.execve(spec["argv"][0], spec["argv"], spec["env"])

output = b""


def read_some(timeout):
    """True when bytes arrived, False on timeout, None at end of output."""
    global output
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        return False
    try:
        data = os.read(fd, 4096)
    except OSError:
        return None
    output += data
    return True if data else None


consumed = 0
for answer in spec["inputs"]:
    deadline = time.time() + 20
    while time.time() < deadline and not output[consumed:].rstrip().endswith(b":"):
        if read_some(0.2) is None:
            break
    consumed = len(output)
    os.write(fd, answer.encode("utf-8"))

# A command that never ends (waiting for input it will not get) is killed after 60 s.
deadline = time.time() + 60
while time.time() < deadline and read_some(1) is not None:
    pass
finished, status = os.waitpid(pid, os.WNOHANG)
if finished == 0:
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
print(json.dumps({"status": os.waitstatus_to_exitcode(status), "output": output.decode("utf-8", "replace")}))
