"""A real SMTP server for the tests (aiosmtpd), one process per test.

Prints `READY <port>` once it listens on 127.0.0.1 (port 0 = a free one) and exits when its stdin
closes, so a server never outlives its test. Every accepted message is written to --outdir as
NNNNNN.json (envelope: mail_from, rcpt_tos, auth login) and NNNNNN.eml (the raw content), the
.eml renamed into place last.

NNNNNN.parsed.json holds the message as Python's `email` package reads it (decoded headers, and
per leaf part its content type, file name and decoded content), an independent check of the MIME.
`smtp_server.py --parse FILE.eml` prints that form of an .eml file instead of serving.

Recipients whose local part starts with `reject` get 550, with `tempfail` get 451. A message to
a recipient whose local part starts with `datafail` is refused with 451 at the end of its data,
and not written.

With `--hang N`, the first N messages are written and then never answered: the client waits for
the reply to its end of data as long as it likes (a sender killed there has delivered a message
it never heard was taken).
"""

import argparse
import asyncio
import json
import os
import socket
import ssl
import sys
import threading
import warnings
from email import policy
from email.parser import BytesParser

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


def parse(raw):
    msg = BytesParser(policy=policy.default).parsebytes(raw)
    parts = []
    for part in msg.walk():
        if part.is_multipart():
            continue
        content = part.get_content()
        if isinstance(content, bytes):
            content = content.decode("utf-8", "replace")
        parts.append(
            {
                "content_type": part.get_content_type(),
                "filename": part.get_filename(),
                "disposition": part.get_content_disposition(),
                "content": content,
            }
        )
    return {
        "headers": {k.lower(): str(v) for k, v in msg.items()},
        "content_type": msg.get_content_type(),
        "defects": [repr(d) for d in msg.defects],
        "parts": parts,
    }


class Handler:
    def __init__(self, outdir, hang=0):
        self.outdir = outdir
        self.count = 0
        self.hang = hang

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        local = address.split("@", 1)[0].lower()
        if local.startswith("reject"):
            return "550 5.1.1 No such user here"
        if local.startswith("tempfail"):
            return "451 4.3.0 Try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if any(a.split("@", 1)[0].lower().startswith("datafail") for a in envelope.rcpt_tos):
            return "451 4.3.0 Cannot take it now"
        self.count += 1
        stem = os.path.join(self.outdir, "%06d" % self.count)
        login = session.auth_data.decode() if isinstance(session.auth_data, bytes) else None
        meta = {"mail_from": envelope.mail_from, "rcpt_tos": envelope.rcpt_tos, "login": login}
        with open(stem + ".json", "w") as f:
            json.dump(meta, f)
        raw = envelope.original_content or envelope.content
        with open(stem + ".parsed.json", "w") as f:
            json.dump(parse(raw), f)
        with open(stem + ".tmp", "wb") as f:
            f.write(raw)
        os.rename(stem + ".tmp", stem + ".eml")
        if self.count <= self.hang:
            await asyncio.Event().wait()
        return "250 2.0.0 Message accepted for delivery"


def authenticator(user, password):
    def check(server, session, envelope, mechanism, auth_data):
        ok = (
            isinstance(auth_data, LoginPassword)
            and auth_data.login.decode() == user
            and auth_data.password.decode() == password
        )
        return AuthResult(success=ok, handled=False, auth_data=auth_data.login if ok else None)

    return check


def main():
    warnings.simplefilter("ignore", DeprecationWarning)
    parser = argparse.ArgumentParser()
    parser.add_argument("--outdir")
    parser.add_argument("--parse", help="print the parsed form of this .eml file and exit")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--mode", choices=["plain", "starttls", "tls"], default="plain")
    parser.add_argument("--auth", help="user:password; makes a login required")
    parser.add_argument("--hang", type=int, default=0, help="never answer the data of the first N messages")
    args = parser.parse_args()
    if args.parse:
        with open(args.parse, "rb") as f:
            json.dump(parse(f.read()), sys.stdout)
        return

    context = None
    if args.mode != "plain":
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(args.cert, args.key)

    handler = Handler(args.outdir, args.hang)
    options = {"hostname": "localhost", "ident": "routines-test-smtp"}
    if args.mode == "starttls":
        options.update(tls_context=context, require_starttls=True)
    if args.auth:
        user, password = args.auth.split(":", 1)
        options.update(
            authenticator=authenticator(user, password),
            auth_required=True,
            auth_require_tls=args.mode != "plain",
        )

    async def serve():
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", args.port))
        sock.listen(128)
        loop = asyncio.get_running_loop()
        tls = context if args.mode == "tls" else None
        server = await loop.create_server(lambda: SMTP(handler, **options), sock=sock, ssl=tls)
        print("READY %d" % sock.getsockname()[1], flush=True)
        await server.serve_forever()

    def watch_stdin():
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    asyncio.run(serve())


if __name__ == "__main__":
    main()
