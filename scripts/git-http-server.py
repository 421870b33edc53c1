#!/usr/bin/env python3
"""A git smart-HTTP server for the tests: `git http-backend` (CGI) behind Python's
standard-library HTTP server, with HTTP basic authentication, on 127.0.0.1.

Usage: git-http-server.py PROJECT_ROOT
The user name and password come from $GIT_HTTP_USER and $GIT_HTTP_PASSWORD (never argv).
Listens on a free port and prints "listening PORT" on standard output once it accepts
connections; runs until killed (the tests stop it by its PID).
"""
import base64
import hmac
import http.server
import os
import subprocess
import sys


def main():
    root = os.path.abspath(sys.argv[1])
    user = os.environ["GIT_HTTP_USER"].encode()
    password = os.environ["GIT_HTTP_PASSWORD"].encode()
    expected = b"Basic " + base64.b64encode(user + b":" + password)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, fmt, *args):  # keep test output quiet
            pass

        def do_GET(self):
            self.serve()

        def do_POST(self):
            self.serve()

        def serve(self):
            given = self.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="vault-test"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_PROJECT_ROOT": root,
                "GIT_HTTP_EXPORT_ALL": "1",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_USER": user.decode(),
                "REMOTE_ADDR": "127.0.0.1",
                "GIT_HTTP_MAX_REQUEST_BUFFER": "100M",
            }
            if self.headers.get("Content-Encoding"):
                env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
            if self.headers.get("Git-Protocol"):
                env["HTTP_GIT_PROTOCOL"] = self.headers["Git-Protocol"]
            result = subprocess.run(["git", "http-backend"], input=body, env=env,
                                    capture_output=True, timeout=60)
            head, _, payload = result.stdout.partition(b"\r\n\r\n")
            if not _:
                head, _, payload = result.stdout.partition(b"\n\n")
            status = 200
            headers = []
            for line in head.decode("latin-1").splitlines():
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.strip().split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print("listening", server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
