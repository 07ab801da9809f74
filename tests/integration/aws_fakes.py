"""Loopback stand-ins for the AWS credential services MONGODB-AWS asks (tests only).

One HTTP server plays all three, each at the path the client is pointed at through the
standard overrides: STS ``AssumeRoleWithWebIdentity`` (``POST /sts/``, with
``AWS_ENDPOINT_URL_STS``), the ECS container endpoint (``GET /ecs/credentials``, with
``AWS_CONTAINER_CREDENTIALS_FULL_URI``) and EC2's IMDSv2 (``PUT /latest/api/token``, then
``GET /latest/meta-data/iam/security-credentials/[role]``, with
``AWS_EC2_METADATA_SERVICE_ENDPOINT``).  Each checks what the real service checks (the web
identity token and role, the ECS authorization token, the IMDSv2 session token) and hands out
``issue``: the identity the simulator knows, with an ``Expiration`` ``lifetime`` seconds ahead.
``requests`` records ``(method, path)`` of every request.
"""

from __future__ import annotations

import datetime
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

ROLE = "sim-role"
IMDS_TOKEN = "imds-session-token"


class FakeAws:
    def __init__(
        self,
        issue: tuple[str, str, str],
        *,
        lifetime: float = 3600.0,
        web_token: str = "the-web-identity-jwt",
        role_arn: str = "arn:aws:iam::000000000000:role/sim-role",
        ecs_authorization: str | None = None,
    ) -> None:
        self.issue = issue
        self.lifetime = lifetime
        self.web_token = web_token
        self.role_arn = role_arn
        self.ecs_authorization = ecs_authorization
        self.requests: list[tuple[str, str]] = []
        self.forms: list[dict[str, list[str]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_PUT(self) -> None:
                fake.requests.append(("PUT", self.path))
                if self.path == "/latest/api/token" and self.headers.get(
                    "X-aws-ec2-metadata-token-ttl-seconds"
                ):
                    self._send(200, IMDS_TOKEN.encode())
                else:
                    self._send(400, b"bad token request")

            def do_GET(self) -> None:
                fake.requests.append(("GET", self.path))
                if self.path.startswith("/latest/meta-data/iam/security-credentials/"):
                    if self.headers.get("X-aws-ec2-metadata-token") != IMDS_TOKEN:
                        self._send(401, b"")
                    elif self.path.endswith("/"):
                        self._send(200, ROLE.encode())
                    elif self.path.endswith("/" + ROLE):
                        self._json(fake.credentials("Token") | {"Code": "Success"})
                    else:
                        self._send(404, b"")
                elif self.path == "/ecs/credentials":
                    wanted = fake.ecs_authorization
                    if wanted is not None and self.headers.get("Authorization") != wanted:
                        self._send(403, b"")
                    else:
                        self._json(fake.credentials("Token"), chunked=True)
                else:
                    self._send(404, b"")

            def do_POST(self) -> None:
                fake.requests.append(("POST", self.path))
                length = int(self.headers.get("Content-Length", "0"))
                form = parse_qs(self.rfile.read(length).decode())
                fake.forms.append(form)
                ok = (
                    form.get("Action") == ["AssumeRoleWithWebIdentity"]
                    and form.get("WebIdentityToken") == [fake.web_token]
                    and form.get("RoleArn") == [fake.role_arn]
                    and form.get("RoleSessionName")
                    and self.headers.get("Accept") == "application/json"
                )
                if not ok:
                    self._send(403, b'{"Error": "AccessDenied"}')
                    return
                result = {"Credentials": fake.credentials("SessionToken", epoch=True)}
                self._json(
                    {"AssumeRoleWithWebIdentityResponse": {"AssumeRoleWithWebIdentityResult": result}}
                )

            def _json(self, document: Any, chunked: bool = False) -> None:
                body = json.dumps(document).encode()
                if not chunked:
                    self._send(200, body)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                half = len(body) // 2
                for piece in (body[:half], body[half:]):
                    self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                self.wfile.write(b"0\r\n\r\n")

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def credentials(self, token_field: str, *, epoch: bool = False) -> dict[str, Any]:
        access_key, secret, token = self.issue
        expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=self.lifetime)
        return {
            "AccessKeyId": access_key,
            "SecretAccessKey": secret,
            token_field: token,
            "Expiration": expires.timestamp() if epoch else expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeAws:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
