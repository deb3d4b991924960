"""A threading stdlib HTTP server for test doubles that keeps quiet when a client hangs up.

Tests drop connections on purpose (a cancelled download, a client timeout, a misbehaving-server
fuzz case): the stdlib server then prints a ``ConnectionResetError`` traceback into the test run's
output, which reads like a failure and is not one. Any other error in a handler is still printed."""

from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer

__all__ = ["QuietHTTPServer"]


class QuietHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # reset, aborted, broken pipe
            return
        super().handle_error(request, client_address)
