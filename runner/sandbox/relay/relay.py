"""The in-container end of the stream transport (python3 images): listen on unix sockets, carry every connection
over this process's stdin/stdout, multiplexed.

Copied into the container by the archive API (never baked into an image); the runner starts it with an exec and
speaks the same frames from the other end (runner/sandbox/stream_transport.py). A frame is ``>BII``: kind, channel,
length, then the payload. Kinds: 1 OPEN (relay to runner; payload: the socket's name), 2 DATA, 3 EOF (no more
from this side), 4 CLOSE. Usage: python3 relay.py DIR NAME... (listens on DIR/NAME.sock; ``ready`` appears in
DIR once they all listen). It exits when its stdin ends.
"""

import os
import socket
import struct
import sys
import threading

HEADER = struct.Struct(">BII")
OPEN, DATA, EOF, CLOSE = 1, 2, 3, 4
out = sys.stdout.buffer
out_lock = threading.Lock()
conns: "dict[int, socket.socket]" = {}
next_id = [0]
id_lock = threading.Lock()


def send(kind, channel, payload=b""):
    with out_lock:
        out.write(HEADER.pack(kind, channel, len(payload)) + payload)
        out.flush()


def pump(channel, conn):
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                break
            send(DATA, channel, data)
    except OSError:
        pass
    send(EOF, channel)


def serve(name, listener):
    while True:
        conn, _ = listener.accept()
        with id_lock:
            next_id[0] += 1
            channel = next_id[0]
        conns[channel] = conn
        send(OPEN, channel, name.encode())
        threading.Thread(target=pump, args=(channel, conn), daemon=True).start()


def read_exactly(stream, n):
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main():
    directory, names = sys.argv[1], sys.argv[2:]
    os.makedirs(directory, exist_ok=True)
    for name in names:
        path = os.path.join(directory, name + ".sock")
        if os.path.exists(path):
            os.unlink(path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(64)
        threading.Thread(target=serve, args=(name, listener), daemon=True).start()
    open(os.path.join(directory, "ready"), "w").close()
    stdin = sys.stdin.buffer
    while True:
        header = read_exactly(stdin, HEADER.size)
        if header is None:
            break
        kind, channel, length = HEADER.unpack(header)
        payload = read_exactly(stdin, length) if length else b""
        conn = conns.get(channel)
        if conn is None:
            continue
        try:
            if kind == DATA:
                conn.sendall(payload)
            elif kind == EOF:
                conn.shutdown(socket.SHUT_WR)
            elif kind == CLOSE:
                conns.pop(channel, None)
                conn.close()
        except OSError:
            pass
    os._exit(0)


if __name__ == "__main__":
    main()
