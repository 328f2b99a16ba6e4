#!/usr/bin/env python3
"""A hub-like HTTP server on 127.0.0.1 for the fetch tests.

Serves what huggingface.co serves to huggingface_hub (read from
huggingface_hub 2.4's file_download.get_hf_file_metadata and http_get):
HEAD/GET {repo}/resolve/{revision}/{file}
  - small files: 200 with ETag "<git blob sha1>", Content-Length, X-Repo-Commit;
  - LFS files (*.safetensors, *.bin): 302 to an absolute storage URL, with
    X-Linked-Etag "<sha256>", X-Linked-Size and X-Repo-Commit;
  - 404 with X-Error-Code (RepoNotFound, RevisionNotFound, EntryNotFound).
GET /cdn/<sha256>: the LFS bytes, honouring Range (206, Content-Range).
GET /squad/<file>: files of --squad-dir.

--root holds one folder per repository id (org/name or name). Faults for the
tests: --token (401 without it), --cut-first-get (the first storage GET
stops half-way), --corrupt (LFS bytes altered, same size), --stall S (every
request waits S seconds first), --slow (LFS bytes in slow chunks),
--pad FILE (that small file served with bytes appended, its ETag still the
true file's; Content-Length counts them, as a proxy that adds them says),
--pad-get-only (the padding on GET only: HEAD's Content-Length is true).
Every request is appended to --log as a JSON line. The chosen port is
written to --port-file once listening.
"""
import argparse
import hashlib
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LFS_SUFFIXES = (".safetensors", ".bin")


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.cut_done = False
        self.blobs = {}  # sha256 -> path


def make_handler(state):
    args = state.args

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _log(self):
            entry = {"method": self.command, "path": self.path, "range": self.headers.get("Range"),
                     "auth": self.headers.get("Authorization")}
            with state.lock, open(args.log, "a") as f:
                f.write(json.dumps(entry) + "\n")

        def _send(self, code, headers=(), body=b"", head=False):
            self.send_response(code)
            for k, v in headers:
                self.send_header(k, v)
            if not any(k.lower() == "content-length" for k, _ in headers):
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head and body:
                self.wfile.write(body)

        def _error(self, code, error_code, head):
            msg = f"{error_code}: {self.path}".encode()
            self._send(code, [("X-Error-Code", error_code), ("X-Error-Message", error_code)], msg, head)

        def do_HEAD(self):
            self._handle(head=True)

        def do_GET(self):
            self._handle(head=False)

        def _handle(self, head):
            self._log()
            if args.stall:
                time.sleep(args.stall)
            m = re.fullmatch(r"/(.+)/resolve/([^/]+)/(.+)", self.path)
            if m:
                return self._resolve(m.group(1), m.group(2), m.group(3), head)
            m = re.fullmatch(r"/cdn/([0-9a-f]{64})", self.path)
            if m and m.group(1) in state.blobs:
                return self._blob(state.blobs[m.group(1)], head)
            m = re.fullmatch(r"/squad/(train|dev)-(v1\.1|v2\.0)\.json", self.path)
            if m and args.squad_dir:
                # The samples under the real names: not the pinned files.
                return self._blob(os.path.join(args.squad_dir, f"dev-{m.group(2)}-sample.json"), head)
            self._error(404, "EntryNotFound", head)

        def _resolve(self, repo, revision, filename, head):
            if args.token and self.headers.get("Authorization") != f"Bearer {args.token}":
                return self._error(401, "GatedRepo", head)
            folder = os.path.join(args.root, repo)
            if not os.path.isdir(folder):
                return self._error(404, "RepoNotFound", head)
            if not args.any_revision and revision not in ("main", COMMIT):
                return self._error(404, "RevisionNotFound", head)
            path = os.path.join(folder, filename)
            if not os.path.isfile(path):
                return self._error(404, "EntryNotFound", head)
            data = open(path, "rb").read()
            if filename.endswith(LFS_SUFFIXES):
                sha = hashlib.sha256(data).hexdigest()
                state.blobs[sha] = path
                # Another host name, as the hub's storage is another host:
                # clients follow this redirect, and send no token there.
                port = self.server.server_address[1]
                self._send(302, [("Location", f"http://localhost:{port}/cdn/{sha}"), ("X-Repo-Commit", COMMIT),
                                 ("X-Linked-Etag", f'"{sha}"'), ("X-Linked-Size", str(len(data))),
                                 ("ETag", f'"{git_blob_sha1(data)}"')], b"", head)
            else:
                etag = git_blob_sha1(data)
                if args.pad == filename and not (head and args.pad_get_only):
                    data = data + b"\n<!-- injected by a proxy -->\n"
                self._send(200, [("X-Repo-Commit", COMMIT), ("ETag", f'"{etag}"'),
                                 ("Content-Type", "application/octet-stream")], data, head)

        def _blob(self, path, head):
            data = open(path, "rb").read()
            if args.corrupt:
                data = bytes([data[0] ^ 0xFF]) + data[1:]
            start = 0
            rng = self.headers.get("Range")
            if rng:
                m = re.fullmatch(r"bytes=(\d+)-", rng)
                start = int(m.group(1))
                if start >= len(data):
                    return self._send(416, [("Content-Range", f"bytes */{len(data)}")], b"", head)
            body = data[start:]
            headers = [("Content-Length", str(len(body))), ("Accept-Ranges", "bytes")]
            if rng:
                headers.append(("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}"))
            self.send_response(206 if rng else 200)
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            if head:
                return
            with state.lock:
                cut = args.cut_first_get and not state.cut_done
                state.cut_done = state.cut_done or cut
            if cut:
                # Half the promised bytes, then the connection drops.
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            chunk = 64 * 1024
            for i in range(0, len(body), chunk):
                self.wfile.write(body[i:i + chunk])
                if args.slow:
                    time.sleep(args.slow)

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--squad-dir")
    ap.add_argument("--token")
    ap.add_argument("--cut-first-get", action="store_true")
    ap.add_argument("--corrupt", action="store_true")
    ap.add_argument("--any-revision", action="store_true",
                    help="answer every revision with the one commit, as a mirror that resolves refs loosely would")
    ap.add_argument("--stall", type=float, default=0)
    ap.add_argument("--pad", help="a small file (config.json) served with bytes appended")
    ap.add_argument("--pad-get-only", action="store_true", help="--pad on GET only; HEAD gives the true size")
    ap.add_argument("--slow", type=float, default=0, help="seconds to sleep after each 64 KiB of LFS bytes")
    args = ap.parse_args()
    open(args.log, "a").close()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(State(args)))
    server.daemon_threads = True
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
