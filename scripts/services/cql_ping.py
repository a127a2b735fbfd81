"""Readiness check for Cassandra: runs one real CQL query over the native protocol.

An open port is not enough (Cassandra binds 9042 a moment before it serves queries, and a
foreign process could hold the port), so this speaks CQL native protocol v4 directly:
STARTUP, optional SASL PLAIN login, then `SELECT release_version FROM system.local`.
Standard library only, so it runs with any python3 and does not need the project's venv.

usage: cql_ping.py HOST PORT [USER PASSWORD]
Prints the server's release_version and exits 0 on success, exits 1 otherwise.
"""

import socket
import struct
import sys

VERSION = 0x04  # request frame, protocol v4 (every Cassandra since 2.2 speaks it)
OP_ERROR, OP_STARTUP, OP_READY, OP_AUTHENTICATE = 0x00, 0x01, 0x02, 0x03
OP_QUERY, OP_RESULT, OP_AUTH_RESPONSE, OP_AUTH_SUCCESS = 0x07, 0x08, 0x0F, 0x10
RESULT_ROWS = 0x0002
CONSISTENCY_ONE = 0x0001


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def _long_string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">i", len(b)) + b


class Reader:
    def __init__(self, body: bytes):
        self.body, self.pos = body, 0

    def take(self, n: int) -> bytes:
        chunk = self.body[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def short(self) -> int:
        return struct.unpack(">H", self.take(2))[0]

    def int(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def string(self) -> str:
        return self.take(self.short()).decode()

    def bytes(self):
        n = self.int()
        return None if n < 0 else self.take(n)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by server")
        buf += chunk
    return buf


def request(sock: socket.socket, opcode: int, body: bytes, stream: int):
    sock.sendall(struct.pack(">BBhBi", VERSION, 0, stream, opcode, len(body)) + body)
    _, _, _, op, length = struct.unpack(">BBhBi", _recv_exact(sock, 9))
    payload = _recv_exact(sock, length)
    if op == OP_ERROR:
        r = Reader(payload)
        code = r.int()
        raise RuntimeError(f"server error 0x{code:04x}: {r.string()}")
    return op, payload


def ping(host: str, port: int, user: str = "", password: str = "") -> str:
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.settimeout(5)
        op, payload = request(sock, OP_STARTUP, struct.pack(">H", 1) + _string("CQL_VERSION") + _string("3.0.0"), 1)
        if op == OP_AUTHENTICATE:
            token = b"\0" + user.encode() + b"\0" + password.encode()
            op, payload = request(sock, OP_AUTH_RESPONSE, struct.pack(">i", len(token)) + token, 2)
            if op != OP_AUTH_SUCCESS:
                raise RuntimeError(f"login failed (opcode 0x{op:02x})")
        elif op != OP_READY:
            raise RuntimeError(f"unexpected answer to STARTUP (opcode 0x{op:02x})")

        query = _long_string("SELECT release_version FROM system.local")
        op, payload = request(sock, OP_QUERY, query + struct.pack(">HB", CONSISTENCY_ONE, 0), 3)
        if op != OP_RESULT:
            raise RuntimeError(f"unexpected answer to QUERY (opcode 0x{op:02x})")
        r = Reader(payload)
        if r.int() != RESULT_ROWS:
            raise RuntimeError("QUERY did not return rows")
        flags, columns = r.int(), r.int()
        if flags & 0x0002:  # has_more_pages: paging state to skip
            r.bytes()
        if flags & 0x0001:  # global_tables_spec
            r.string(), r.string()
        for _ in range(columns):
            if not flags & 0x0001:
                r.string(), r.string()
            r.string()  # column name
            r.short()  # type id (varchar; no parameters)
        if r.int() < 1:
            raise RuntimeError("system.local returned no row")
        return (r.bytes() or b"").decode()


def main() -> int:
    host, port = sys.argv[1], int(sys.argv[2])
    user, password = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else ("", "")
    try:
        print(ping(host, port, user, password))
        return 0
    except Exception as exc:
        print(f"not ready: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
