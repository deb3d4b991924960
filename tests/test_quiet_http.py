"""The test doubles' HTTP server (``tests/support/quiet_http.py``): a client that hangs up prints
nothing into the run's output, and any other error in a handler still prints its traceback."""

from __future__ import annotations

import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler

from tests.support.quiet_http import QuietHTTPServer


class _Joined(QuietHTTPServer):
    daemon_threads = False  # server_close() waits for every request's thread: its output is in
    block_on_close = True


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        raise ValueError("a bug in the handler")

    def log_message(self, *args) -> None:
        pass


def _serve(send: bytes, *, reset: bool) -> None:
    server = _Joined(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        with socket.create_connection(server.server_address[:2], timeout=30) as c:
            c.sendall(send)
            if reset:  # close with a reset, not a FIN: the server's read fails
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                c.shutdown(socket.SHUT_WR)
                c.recv(1)  # the server closed its side: the handler has run
    finally:
        server.shutdown()
        server.server_close()
        thread.join(30)


def test_a_client_that_hangs_up_prints_nothing(capsys):
    _serve(b"GET / HTTP/1.1\r\nHost: x", reset=True)  # cut inside the request
    assert capsys.readouterr().err == ""


def test_an_error_in_a_handler_still_prints_its_traceback(capsys):
    _serve(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", reset=False)
    err = capsys.readouterr().err
    assert "ValueError: a bug in the handler" in err
