"""serve_raw.py - raw-socket clients of `andrea serve` for what HTTP libraries hide
(tests/test_serve_api.sh, test_serve.sh). Loopback only; every socket has a timeout.

usage: python3 serve_raw.py CHECK PORT [ARGS]
  pipeline             two GETs in one write on one connection: both answered, and the
                       connection stays open (keep-alive)
  bigcl                a POST whose Content-Length is over the limit (2 GB, 2^64 - 1): one
                       JSON 413 each, nothing else
  halfclose BODY       a POST of BODY, then shutdown(SHUT_WR): the answer still arrives
  perclient N LIMIT    N connections from 127.0.0.2 that send nothing: at most LIMIT stay
                       open; then a request from 127.0.0.1 is answered
Prints one line per check ("ok: ..." or "FAIL: ..."); exits 1 on a failure.
"""
import socket
import sys
import time

PORT = int(sys.argv[2])
fails = 0


def check(ok, what):
    global fails
    print(("ok: " if ok else "FAIL: ") + what)
    fails += 0 if ok else 1


def connect(src="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    s.bind((src, 0))
    s.connect(("127.0.0.1", PORT))
    return s


def read_until(s, pred, timeout=10):
    out, end = b"", time.time() + timeout
    s.settimeout(0.5)
    while time.time() < end and not pred(out):
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        if not d:
            break
        out += d
    return out


def pipeline():
    s = connect()
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/models/x HTTP/1.1\r\nHost: x\r\n\r\n")
    out = read_until(s, lambda o: o.count(b"HTTP/1.1 ") >= 2 and o.endswith(b"}}"))
    check(out.count(b"HTTP/1.1 200") == 1 and out.count(b"HTTP/1.1 404") == 1 and b"Connection: close" not in out,
          "two pipelined GETs: 200 then 404, no Connection: close")
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    out = read_until(s, lambda o: o.endswith(b"}"))
    check(out.startswith(b"HTTP/1.1 200"), "a third GET on the same connection (keep-alive)")
    s.close()


def bigcl():
    for n in ("2000000000", "18446744073709551615"):  # 2^64 and beyond: MHD 0.9.75 answers itself
        s = connect()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + n.encode() + b"\r\n\r\n{")
        out = read_until(s, lambda o: False, timeout=3)
        s.close()
        check(out.count(b"HTTP/1.1 ") == 1 and out.startswith(b"HTTP/1.1 413") and b"body_too_large" in out
              and b"<html" not in out, f"Content-Length {n}: one JSON 413 ({out[:60]!r})")


def halfclose(body):
    s = connect()
    b = body.encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(b) + b)
    s.shutdown(socket.SHUT_WR)
    t = time.time()
    out = read_until(s, lambda o: o.endswith(b"}}") or o.endswith(b"}"), timeout=120)
    s.close()
    check(out.startswith(b"HTTP/1.1 200") and b'"finish_reason":"length"' in out,
          f"half-closed client answered after {time.time() - t:.2f} s ({out[:40]!r})")


def perclient(n, limit):
    socks, refused = [], 0
    for _ in range(n):
        try:
            socks.append(connect("127.0.0.2"))
        except OSError:
            refused += 1
    time.sleep(0.5)
    open_ = 0
    for s in socks:  # a connection over the limit is closed at once: EOF
        s.setblocking(False)
        try:
            open_ += 1 if s.recv(1) else 0
        except BlockingIOError:
            open_ += 1
        except OSError:
            pass
    check(open_ <= limit, f"{n} connections from 127.0.0.2: {open_} stay open (limit {limit})")
    s = connect()
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    out = read_until(s, lambda o: o.endswith(b"}"))
    check(out.startswith(b"HTTP/1.1 200"), "meanwhile 127.0.0.1 is served")
    for x in socks + [s]:
        x.close()


cmd = sys.argv[1]
if cmd == "pipeline":
    pipeline()
elif cmd == "bigcl":
    bigcl()
elif cmd == "halfclose":
    halfclose(sys.argv[3])
elif cmd == "perclient":
    perclient(int(sys.argv[3]), int(sys.argv[4]))
sys.exit(1 if fails else 0)
