"""A stand-in for a cloud bucket: HTTP on 127.0.0.1 only, every response delayed.

    with LatencyObjectStore({"0.jpg": jpeg_bytes}, latency_s=0.01) as store:
        urllib.request.urlopen(f"{store.url}/0.jpg").read()

The server runs in its own process, so it neither competes with the training
loop for the GIL nor is inherited half-alive by forked DataLoader workers.
"""
from __future__ import annotations

import multiprocessing
import socket
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _serve(listener: socket.socket, objects: dict[str, bytes], latency_s: float) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            time.sleep(latency_s)  # time to first byte of a remote object store
            body = objects.get(self.path.lstrip("/"))
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(listener.getsockname(), Handler, bind_and_activate=False)
    server.socket = listener
    server.daemon_threads = True
    server.serve_forever()


class LatencyObjectStore:
    def __init__(self, objects: dict[str, bytes], latency_s: float):
        self.objects, self.latency_s = objects, latency_s
        self.url = ""
        self._process = None

    def __enter__(self) -> LatencyObjectStore:
        listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        context = multiprocessing.get_context("fork")
        self._process = context.Process(target=_serve, args=(listener, self.objects, self.latency_s),
                                        daemon=True)
        self._process.start()
        listener.close()  # the server process holds its own copy
        return self

    def __exit__(self, *exc) -> None:
        self._process.terminate()
        self._process.join(timeout=5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
