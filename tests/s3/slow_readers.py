#!/usr/bin/env python3
"""slow_readers.py HOST PORT PATH EXPECTED READERS BYTES_PER_SECOND

READERS clients GET PATH at once, each reading at most BYTES_PER_SECOND
through a small receive buffer, so that what the server sends waits in the
server rather than in the kernel's socket buffers; each body must equal the
file EXPECTED. Exits 1 naming the first reader that got anything else.
"""
import socket
import sys
import threading
import time

host, port, path, expected_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
readers, rate = int(sys.argv[5]), int(sys.argv[6])
with open(expected_file, "rb") as f:
    expected = f.read()
failures = []


def read_one(number):
    s = socket.socket()
    # Set before connecting: it fixes the window (no autotuning to 32 MiB).
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)
    s.connect((host, port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    data = bytearray()
    start = time.monotonic()
    while True:
        piece = s.recv(64 << 10)
        if not piece:
            break
        data += piece
        ahead = len(data) / rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)
    s.close()
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200") or body != expected:
        status_line = head.split(b"\r\n")[0]
        failures.append(f"reader {number}: {status_line!r}, {len(body)} bytes")


threads = [threading.Thread(target=read_one, args=(i,)) for i in range(readers)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if failures:
    print("; ".join(failures))
    sys.exit(1)
