#!/usr/bin/python3
"""sigv4_check_server.py COMMAND [ARG...]: runs COMMAND beside a small S3 of
our own on loopback that recomputes every request's SigV4 signature with
botocore (AWS's own signing code, Debian's python3-botocore) and answers 403
SignatureDoesNotMatch when ours differs. s3rver does not check signatures;
this does, the way S3 does: the query and path are taken decoded and put in
canonical form again, so a query sent unsorted or not encoded fails.

Behind the check it keeps objects in memory (puts, ranged gets, HEAD,
DELETE, multipart uploads) and lists two keys a page, so that every listing
of more goes through continuation tokens; tokens and upload ids hold
characters that need encoding. COMMAND gets the same environment as from
with_s3rver.sh, and DSTREAM_TEST_S3_SIGNATURES_CHECKED=1.
"""
import hashlib
import http.server
import os
import subprocess
import sys
import threading
import urllib.parse
import xml.etree.ElementTree as ElementTree

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

BUCKET = "sigv4-check"
REGION = "us-east-1"
# AWS's documented example pair; the secret has '/' and '+' in it.
ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "session/token+example="
PAGE_KEYS = 2

objects = {}
uploads = {}
lock = threading.Lock()


def canonical_path(raw):
    return urllib.parse.quote(urllib.parse.unquote(raw), safe="/-_.~")


def signature_problem(method, raw_path, raw_query, headers, body):
    """None when the request is signed as S3 would check it, else why not."""
    authorization = headers.get("Authorization", "")
    prefix = "AWS4-HMAC-SHA256 "
    if not authorization.startswith(prefix):
        return "no SigV4 Authorization"
    fields = dict(part.strip().split("=", 1) for part in authorization[len(prefix):].split(","))
    credential = fields["Credential"].split("/")
    if credential[0] != ACCESS_KEY or credential[2:] != [REGION, "s3", "aws4_request"]:
        return "credential scope " + "/".join(credential[2:])
    if raw_path != canonical_path(raw_path):
        return "path not in canonical form: " + raw_path
    if headers.get("x-amz-content-sha256") != hashlib.sha256(body).hexdigest():
        return "x-amz-content-sha256 is not the body's hash"
    signed = fields["SignedHeaders"].split(";")
    for needed in ("host", "x-amz-content-sha256", "x-amz-date", "x-amz-security-token"):
        if needed not in signed:
            return needed + " is not signed"
    request = AWSRequest(
        method=method,
        url="http://" + headers["Host"] + raw_path,
        params=urllib.parse.parse_qsl(raw_query, keep_blank_values=True),
        headers={name: headers[name] for name in signed},
        data=body,
    )
    auth = S3SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN), "s3", REGION)
    request.context["timestamp"] = headers["x-amz-date"]
    canonical = auth.canonical_request(request)
    expected = auth.signature(auth.string_to_sign(request, canonical), request)
    if fields["Signature"] != expected:
        return "signature mismatch; botocore's canonical request:\n" + canonical
    return None


class handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code):
        self.answer(status, f"<Error><Code>{code}</Code></Error>".encode())

    def handle_any(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        raw_path, _, raw_query = self.path.partition("?")
        problem = signature_problem(self.command, raw_path, raw_query, self.headers, body)
        if problem:
            sys.stderr.write(f"sigv4_check_server: {self.command} {self.path}: {problem}\n")
            return self.error(403, "SignatureDoesNotMatch")
        query = dict(urllib.parse.parse_qsl(raw_query, keep_blank_values=True))
        bucket, _, key = urllib.parse.unquote(raw_path).lstrip("/").partition("/")
        if bucket != BUCKET:
            return self.error(404, "NoSuchBucket")
        with lock:
            if key:
                return self.object_call(key, query, body)
            return self.bucket_call(query)

    def bucket_call(self, query):
        if self.command != "GET" or query.get("list-type") != "2":
            return self.error(400, "NotImplemented")
        prefix = query.get("prefix", "")
        keys = sorted(k for k in objects if k.startswith(prefix))
        after = query.get("continuation-token")
        if after is not None:
            if not after.startswith("after/ +="):
                return self.error(400, "InvalidArgument")
            keys = [k for k in keys if k > after[len("after/ +="):]]
        page, rest = keys[:PAGE_KEYS], keys[PAGE_KEYS:]
        root = ElementTree.Element("ListBucketResult")
        for k in page:
            contents = ElementTree.SubElement(root, "Contents")
            ElementTree.SubElement(contents, "Key").text = k
            ElementTree.SubElement(contents, "Size").text = str(len(objects[k]))
        ElementTree.SubElement(root, "IsTruncated").text = "true" if rest else "false"
        if rest:
            ElementTree.SubElement(root, "NextContinuationToken").text = "after/ +=" + page[-1]
        self.answer(200, ElementTree.tostring(root, encoding="utf-8"))

    def object_call(self, key, query, body):
        method = self.command
        if method == "POST" and "uploads" in query:
            upload_id = f"upload/{len(uploads) + 1}+id="
            uploads[upload_id] = {"key": key, "parts": {}}
            return self.answer(200, f"<InitiateMultipartUploadResult><UploadId>{upload_id}"
                                    "</UploadId></InitiateMultipartUploadResult>".encode())
        if "uploadId" in query:
            upload = uploads.get(query["uploadId"])
            if upload is None or upload["key"] != key:
                return self.error(404, "NoSuchUpload")
            if method == "PUT":
                etag = '"' + hashlib.md5(body).hexdigest() + '"'
                upload["parts"][int(query["partNumber"])] = (etag, body)
                return self.answer(200, headers=[("ETag", etag)])
            if method == "DELETE":
                del uploads[query["uploadId"]]
                return self.answer(204)
            listed = [(int(p.findtext("PartNumber")), p.findtext("ETag"))
                      for p in ElementTree.fromstring(body).iter("Part")]
            if [n for n, _ in listed] != list(range(1, len(listed) + 1)) or any(
                    upload["parts"].get(n, (None,))[0] != etag for n, etag in listed):
                return self.error(400, "InvalidPart")
            objects[key] = b"".join(upload["parts"][n][1] for n, _ in listed)
            del uploads[query["uploadId"]]
            return self.answer(200, b"<CompleteMultipartUploadResult/>")
        if method == "PUT":
            objects[key] = body
            return self.answer(200, headers=[("ETag", '"' + hashlib.md5(body).hexdigest() + '"')])
        if method == "DELETE":
            objects.pop(key, None)
            return self.answer(204)
        if key not in objects:
            return self.error(404, "NoSuchKey")
        data = objects[key]
        if method == "HEAD":
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            return self.end_headers()
        ranged = self.headers.get("Range", "")
        if not ranged.startswith("bytes="):
            return self.answer(200, data)
        first, last = (int(n) for n in ranged[len("bytes="):].split("-"))
        last = min(last, len(data) - 1)
        self.answer(206, data[first:last + 1],
                    headers=[("Content-Range", f"bytes {first}-{last}/{len(data)}")])

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = handle_any


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: sigv4_check_server.py COMMAND [ARG...]")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = dict(os.environ,
               DSTREAM_TEST_S3_ENDPOINT=f"http://127.0.0.1:{server.server_address[1]}",
               DSTREAM_TEST_S3_BUCKET=BUCKET,
               DSTREAM_TEST_S3_SIGNATURES_CHECKED="1",
               AWS_ACCESS_KEY_ID=ACCESS_KEY,
               AWS_SECRET_ACCESS_KEY=SECRET_KEY,
               AWS_SESSION_TOKEN=SESSION_TOKEN)
    try:
        code = subprocess.call(sys.argv[1:], env=env)
    finally:
        server.shutdown()
    sys.exit(code)


if __name__ == "__main__":
    main()
