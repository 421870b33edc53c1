"""Configures, starts, stops and inspects a real django-oauth-toolkit server for the tests.

Run through scripts/oauth-server (which provides the venv). Everything lives in one
folder (DIR): settings, SQLite database, RSA key, client secrets (0600), logs, PIDs, and
server.json, the facts the tests read. Every wait here is bounded.
"""
import json
import hashlib
import http.server
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

ACCESS_TTL = int(os.environ.get("VAULT_OAUTH_ACCESS_TTL", "20"))

SETTINGS = """\
import os
BASE = os.path.dirname(os.path.abspath(__file__))
SECRET_KEY = {secret_key!r}
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = ["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions", "oauth2_provider"]
MIDDLEWARE = ["django.contrib.sessions.middleware.SessionMiddleware",
              "django.middleware.csrf.CsrfViewMiddleware",
              "django.contrib.auth.middleware.AuthenticationMiddleware"]
# The browser sign-in's real pages: Django's login form and the toolkit's consent page.
TEMPLATES = [{{"BACKEND": "django.template.backends.django.DjangoTemplates", "DIRS": [os.path.join(BASE, "templates")],
              "APP_DIRS": True, "OPTIONS": {{"context_processors": ["django.template.context_processors.request",
                                                                    "django.contrib.auth.context_processors.auth"]}}}}]
LOGIN_URL = "/accounts/login/"
ROOT_URLCONF = "urls"
DATABASES = {{"default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": os.path.join(BASE, "db.sqlite3"),
                          "OPTIONS": {{"timeout": 30, "transaction_mode": "IMMEDIATE"}}}}}}
# Test speed: client secrets and the user's password are hashed with this (PBKDF2 would cost
# ~0.5 s of CPU per confidential-client request on a loaded 2-core machine).
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Server errors (500) with their traceback go to server.log.
LOGGING = {{"version": 1, "handlers": {{"stderr": {{"class": "logging.StreamHandler"}}}},
           "loggers": {{"django.request": {{"handlers": ["stderr"], "level": "ERROR"}}}}}}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
with open(os.path.join(BASE, "oidc.key")) as f:
    OIDC_KEY = f.read()
OAUTH2_PROVIDER = {{
    "ACCESS_TOKEN_EXPIRE_SECONDS": {access_ttl},
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
    "DEVICE_FLOW_INTERVAL": 1,
    "OAUTH_DEVICE_VERIFICATION_URI": "http://127.0.0.1:{port}/o/device/",
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": OIDC_KEY,
    "PKCE_REQUIRED": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    # The real server with a misbehaviour switched on for the clients "vault-misbehave-<mode>" only.
    "OAUTH2_VALIDATOR_CLASS": "misbehave.Validator",
    "SCOPES": {{"openid": "OpenID Connect", "read": "Read", "write": "Write", "introspection": "Introspect"}},
}}
"""

URLS = """\
from django.contrib.auth.views import LoginView
from django.urls import include, path
from oauth2_provider import urls as oauth2_urls
urlpatterns = [
    path("accounts/login/", LoginView.as_view(template_name="login.html")),
    path("o/", include("oauth2_provider.urls")),
    path("", include((oauth2_urls.metadata_urlpatterns, "oauth2_provider_metadata"))),
]
"""

MISBEHAVE = """\
\"\"\"django-oauth-toolkit's own validator, misbehaving for the clients vault-misbehave-<mode>.

expired    the ID token expired an hour ago       audience   aud is another client
issuer     iss is another issuer                  nonce      the nonce is not the one sent
signature  one character of the signature changed
kid        signed by a key the JWKS never published (kid "rotated-away"): a rotation vault cannot follow
none       alg "none" and no signature          hs256      HS256, keyed with the issuer's public key (PEM)

For the clients vault-misbehave-refresh-<mode> the first grant is sound and only the ID token of a
refresh answer (grant_type refresh_token) misbehaves: what a session meets after signing in.
\"\"\"
import base64
import hashlib
import hmac
import json
import time

from jwcrypto import jwk, jwt
from oauth2_provider.oauth2_validators import OAuth2Validator


def mode_of(request):
    client_id = request.client.client_id if request.client else ""
    if not client_id.startswith("vault-misbehave-"):
        return ""
    mode = client_id[len("vault-misbehave-"):]
    if mode.startswith("refresh-"):
        return mode[len("refresh-"):] if getattr(request, "grant_type", None) == "refresh_token" else ""
    return mode


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_json(value):
    return b64url(json.dumps(value, separators=(",", ":")).encode())


class Validator(OAuth2Validator):
    oidc_claim_scope = None   # every claim whatever the scopes (the tests ask for "openid read")

    def get_additional_claims(self, request):
        # The test user's name and email, in ID tokens and at userinfo, as a provider keeps them.
        return {"name": "Alice Example", "email": "alice@example.test"}

    def get_id_token_dictionary(self, token, token_handler, request):
        claims, expiration_time = super().get_id_token_dictionary(token, token_handler, request)
        mode, now = mode_of(request), int(time.time())
        if mode == "expired":
            claims["exp"], claims["iat"] = now - 3600, now - 7200
        elif mode == "audience":
            claims["aud"] = "someone-else"
        elif mode == "issuer":
            claims["iss"] = "https://evil.example"
        elif mode == "nonce":
            claims["nonce"] = "not-the-nonce-that-was-sent"
        return claims, expiration_time

    def finalize_id_token(self, id_token, token, token_handler, request):
        serialized = super().finalize_id_token(id_token, token, token_handler, request)
        mode = mode_of(request)
        if mode == "signature":
            head, payload, signature = serialized.split(".")
            index = len(signature) // 2
            signature = signature[:index] + ("A" if signature[index] != "A" else "B") + signature[index + 1:]
            serialized = ".".join([head, payload, signature])
        elif mode == "kid":
            payload = serialized.split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            key = jwk.JWK.generate(kty="RSA", size=2048, kid="rotated-away")
            signed = jwt.JWT(header={"typ": "JWT", "alg": "RS256", "kid": "rotated-away"}, claims=claims)
            signed.make_signed_token(key)
            serialized = signed.serialize()
        elif mode in ("none", "hs256"):
            head, payload, _ = serialized.split(".")
            header = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
            header["alg"] = "none" if mode == "none" else "HS256"
            head = b64url_json(header)
            if mode == "none":
                serialized = head + "." + payload + "."
            else:
                # The classic confusion: the issuer's public key (PEM, as published) as the HMAC key.
                from django.conf import settings
                public = jwk.JWK.from_pem(settings.OAUTH2_PROVIDER["OIDC_RSA_PRIVATE_KEY"].encode()).export_to_pem()
                mac = hmac.new(public, (head + "." + payload).encode(), hashlib.sha256).digest()
                serialized = head + "." + payload + "." + b64url(mac)
        return serialized
"""

LOGIN_PAGE = """\
<!doctype html><title>Sign in</title>
<form method="post" action="/accounts/login/">{% csrf_token %}{{ form.as_p }}
<input type="hidden" name="next" value="{{ next }}"><button type="submit">Sign in</button></form>
"""

MANAGE = """\
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")
from django.core.management import execute_from_command_line
execute_from_command_line(sys.argv)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_private(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def django_setup(folder):
    sys.path.insert(0, folder)
    os.environ["DJANGO_SETTINGS_MODULE"] = "settings"
    import django
    django.setup()


def rsa_key_pem():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def wait_ready(url, process, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return True
        except Exception:
            pass
        time.sleep(0.1)
    return False


def start(folder):
    folder = os.path.abspath(folder)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    python = sys.executable
    for attempt in range(3):
        port = free_port()
        write_private(os.path.join(folder, "oidc.key"), rsa_key_pem())
        with open(os.path.join(folder, "settings.py"), "w") as f:
            f.write(SETTINGS.format(secret_key=secrets.token_urlsafe(40), access_ttl=ACCESS_TTL, port=port))
        with open(os.path.join(folder, "urls.py"), "w") as f:
            f.write(URLS)
        with open(os.path.join(folder, "manage.py"), "w") as f:
            f.write(MANAGE)
        with open(os.path.join(folder, "misbehave.py"), "w") as f:
            f.write(MISBEHAVE)
        os.makedirs(os.path.join(folder, "templates"), exist_ok=True)
        with open(os.path.join(folder, "templates", "login.html"), "w") as f:
            f.write(LOGIN_PAGE)
        db = os.path.join(folder, "db.sqlite3")
        if not os.path.exists(db):
            subprocess.run([python, "manage.py", "migrate", "-v", "0"], cwd=folder, check=True, timeout=300)
            facts = populate(folder)
        else:
            with open(os.path.join(folder, "server.json")) as f:
                facts = json.load(f)
        log = open(os.path.join(folder, "server.log"), "ab")
        process = subprocess.Popen([python, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
                                   cwd=folder, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
        with open(os.path.join(folder, "server.pid"), "w") as f:
            f.write(str(process.pid))
        issuer = f"http://127.0.0.1:{port}/o"
        if wait_ready(issuer + "/.well-known/openid-configuration", process, 60):
            break
        stop_pid(os.path.join(folder, "server.pid"))
    else:
        sys.exit("oauth-server: the server did not become ready (see %s/server.log)" % folder)
    standin_port = start_standin(folder)
    facts.update({
        "folder": folder, "port": port, "pid": process.pid, "issuer": issuer,
        "token_endpoint": issuer + "/token/", "revocation_endpoint": issuer + "/revoke_token/",
        "device_authorization_endpoint": issuer + "/device-authorization/",
        "standin_port": standin_port, "standin": f"http://127.0.0.1:{standin_port}",
        "access_token_ttl": ACCESS_TTL,
    })
    with open(os.path.join(folder, "server.json"), "w") as f:
        json.dump(facts, f, indent=1)
    print(json.dumps(facts))


def populate(folder):
    django_setup(folder)
    from django.contrib.auth import get_user_model
    from oauth2_provider.models import Application
    password = secrets.token_urlsafe(18)
    write_private(os.path.join(folder, "alice.password"), password)
    user = get_user_model().objects.create_user("alice", password=password)
    facts = {"username": "alice", "user_id": str(user.pk), "password_file": os.path.join(folder, "alice.password")}
    apps = [
        ("device", "vault-device", Application.CLIENT_PUBLIC, Application.GRANT_DEVICE_CODE),
        ("confidential", "vault-confidential", Application.CLIENT_CONFIDENTIAL, Application.GRANT_PASSWORD),
        ("daemon", "vault-daemon", Application.CLIENT_CONFIDENTIAL, Application.GRANT_CLIENT_CREDENTIALS),
        # Browser sign-in: a public client whose loopback redirect matches any port (RFC 8252 §7.3).
        ("browser", "vault-browser", Application.CLIENT_PUBLIC, Application.GRANT_AUTHORIZATION_CODE),
    ] + [("misbehave-" + mode, "vault-misbehave-" + mode, Application.CLIENT_PUBLIC, Application.GRANT_AUTHORIZATION_CODE)
         for mode in ("expired", "audience", "issuer", "nonce", "signature", "kid", "none", "hs256")
    ] + [("misbehave-refresh-" + mode, "vault-misbehave-refresh-" + mode, Application.CLIENT_PUBLIC, Application.GRANT_AUTHORIZATION_CODE)
         for mode in ("expired", "audience", "issuer", "signature", "kid", "none", "hs256")]
    for role, client_id, client_type, grant in apps:
        secret = secrets.token_urlsafe(30) if client_type == Application.CLIENT_CONFIDENTIAL else ""
        redirect = "http://127.0.0.1/callback" if grant == Application.GRANT_AUTHORIZATION_CODE else ""
        Application.objects.create(name=role, client_id=client_id, client_secret=secret, user=user,
                                   client_type=client_type, authorization_grant_type=grant,
                                   algorithm=Application.RS256_ALGORITHM, redirect_uris=redirect)
        facts[role + "_client_id"] = client_id
        if secret:
            path = os.path.join(folder, role + ".secret")
            write_private(path, secret)
            facts[role + "_secret_file"] = path
    return facts


class StandIn(http.server.BaseHTTPRequestHandler):
    """Not an authorization server: the failures a real one shows only by accident.

    /500/...     500 with Retry-After: 1      /garbage/...  200 with a body that is not JSON
    /slow/...    answers after 10 s           /html/...     502 with an HTML page
    /trickle/... a 200 head at once, then its 40-byte body one byte every 0.7 s (28 s in all)
    /meta/...    a metadata document (issuer /meta) whose endpoints are /500/...
    /count       how many requests each path got (JSON; also in FOLDER/standin-counts.json)
    /device/authorize, /device/token
                 an RFC 8628 device grant that counts the gap between polls: each device code
                 answers authorization_pending, slow_down, authorization_pending, slow_down,
                 then tokens; /polls (and FOLDER/standin-polls.json) give each code's poll
                 times (seconds, monotonic) and the answers it got, so a test checks the client's interval (RFC 8628 §3.5)
    """
    counts = {}
    polls = {}
    audience_live = {}
    audience_log = []
    device_script = ["authorization_pending", "slow_down", "authorization_pending", "slow_down", "tokens"]
    counts_file = "standin-counts.json"
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="application/json", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/count":
            with StandIn.lock:
                body = json.dumps(StandIn.counts).encode()
            return self.reply(200, body)
        if self.path == "/polls":
            with StandIn.lock:
                body = json.dumps(StandIn.polls).encode()
            return self.reply(200, body)
        self.do_POST()

    def count(self, name):
        with StandIn.lock:
            StandIn.counts[name] = StandIn.counts.get(name, 0) + 1
            # Also in FOLDER/standin-counts.json, for tests that read files more easily than URLs.
            temporary = StandIn.counts_file + ".tmp"
            with open(temporary, "w") as f:
                json.dump(StandIn.counts, f)
            os.replace(temporary, StandIn.counts_file)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        received = self.rfile.read(length) if length else b""
        mode = self.path.strip("/").split("/")[0]
        if self.path.endswith("/meta"):
            mode = "meta"   # RFC 8414 form: /.well-known/oauth-authorization-server/meta
        self.count(mode)
        if mode == "meta" and "well-known" in self.path:
            base = "http://127.0.0.1:%d" % self.server.server_address[1]
            return self.reply(200, json.dumps({"issuer": base + "/meta", "token_endpoint": base + "/500/token",
                                               "revocation_endpoint": base + "/500/revoke"}).encode())
        if mode == "500":
            return self.reply(500, b'{"error":"server_error","error_description":"down\\u001b[31m for maintenance"}',
                              headers=[("Retry-After", "1")])
        if mode == "garbage":
            return self.reply(200, b"\x00\xffthis is not json{{", content_type="text/plain")
        if mode == "slow":
            time.sleep(10)
            return self.reply(200, b"{}")
        if mode == "trickle":
            body = b'{"access_token":"t","token_type":"Bearer"}'[:40]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for index in range(len(body)):
                try:
                    self.wfile.write(body[index:index + 1])
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.7)
            return
        if mode == "device":
            return self.device(received)
        if mode == "oidc":
            return self.oidc(received)
        if mode == "dpop":
            return self.dpop(received)
        if mode == "audience":
            return self.audience(received)
        if mode == "html":
            return self.reply(502, b"<html><body>Bad gateway</body></html>", content_type="text/html")
        return self.reply(404, b'{"error":"not_found"}')


    def device(self, received):
        import urllib.parse
        form = urllib.parse.parse_qs(received.decode("ascii", "replace"))
        if self.path.startswith("/device/authorize"):
            with StandIn.lock:
                code = "dc-%d" % (len(StandIn.polls) + 1)
                StandIn.polls[code] = []
            base = "http://127.0.0.1:%d" % self.server.server_address[1]
            return self.reply(200, json.dumps({"device_code": code, "user_code": "WDJB-MJHT",
                                               "verification_uri": base + "/device", "expires_in": 120,
                                               "interval": 1}).encode())
        code = (form.get("device_code") or [""])[0]
        with StandIn.lock:
            if code not in StandIn.polls:
                return self.reply(400, b'{"error":"invalid_grant"}')
            answered = StandIn.polls[code]
            answer = StandIn.device_script[min(len(answered), len(StandIn.device_script) - 1)]
            answered.append([time.monotonic(), answer])
            temporary = os.path.join(os.path.dirname(StandIn.counts_file), "standin-polls.json.tmp")
            with open(temporary, "w") as f:
                json.dump(StandIn.polls, f)
            os.replace(temporary, temporary[:-len(".tmp")])
        if answer == "tokens":
            return self.reply(200, json.dumps({"access_token": "standin-access-" + code, "token_type": "Bearer",
                                               "expires_in": 600, "refresh_token": "standin-refresh-" + code}).encode())
        return self.reply(400, json.dumps({"error": answer}).encode())


    def dpop(self, received):
        import urllib.parse
        base = "http://127.0.0.1:%d/dpop" % self.server.server_address[1]
        proof = self.headers.get("DPoP") or ""
        with DPoP.lock:
            if self.path == "/dpop/token":
                form = urllib.parse.parse_qs(received.decode("ascii", "replace"))
                jkt, why, signer = check_proof(proof, "POST", base + "/token") if proof else (None, "no proof", None)
                DPoP.log.append({"endpoint": "token", "ok": jkt is not None, "why": why, "jkt": signer})
                self.write_dpop_log()
                if jkt is None:
                    if why == "nonce":
                        return self.reply(400, b'{"error":"use_dpop_nonce","error_description":"a nonce is required"}',
                                          headers=[("DPoP-Nonce", DPoP.nonce)])
                    return self.reply(400, json.dumps({"error": "invalid_dpop_proof", "error_description": why}).encode())
                refresh = (form.get("refresh_token") or [""])[0]
                if (form.get("grant_type") or [""])[0] != "refresh_token" or not refresh:
                    return self.reply(400, b'{"error":"unsupported_grant_type"}')
                bound = DPoP.refresh_jkt.setdefault(refresh, jkt)
                if bound != jkt:
                    return self.reply(400, b'{"error":"invalid_grant","error_description":"the refresh token is bound to another key"}')
                access, rotated = "dpop-access-" + secrets.token_urlsafe(12), "dpop-refresh-" + secrets.token_urlsafe(12)
                DPoP.access_jkt[access] = jkt
                DPoP.refresh_jkt[rotated] = jkt
                return self.reply(200, json.dumps({"access_token": access, "token_type": "DPoP", "expires_in": 600,
                                                   "refresh_token": rotated}).encode(), headers=[("DPoP-Nonce", DPoP.nonce)])
            if self.path == "/dpop/resource":
                scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
                jkt, why, signer = check_proof(proof, "GET", base + "/resource", access_token=token) if proof else (None, "no proof", None)
                ok = scheme == "DPoP" and jkt is not None and DPoP.access_jkt.get(token) == jkt
                DPoP.log.append({"endpoint": "resource", "ok": ok, "why": why, "scheme": scheme, "jkt": signer})
                self.write_dpop_log()
                if not ok:
                    return self.reply(401, b'{"error":"invalid_token"}', headers=[("WWW-Authenticate", 'DPoP error="invalid_dpop_proof"')])
                return self.reply(200, b'{"resource":"granted"}')
        return self.reply(404, b'{"error":"not_found"}')

    def audience(self, received):
        import urllib.parse
        form = urllib.parse.parse_qs(received.decode("ascii", "replace"))
        refresh = (form.get("refresh_token") or [""])[0]
        resource = (form.get("resource") or [None])[0]
        with DPoP.lock:
            live, log = StandIn.audience_live, StandIn.audience_log
            # A refresh token the test made up ("seed-…") is live once; a rotated one is live until used.
            if refresh.startswith("seed-") and refresh not in live:
                live[refresh] = True
            if not live.get(refresh):
                log.append({"resource": resource, "ok": False})
                answer = (400, b'{"error":"invalid_grant","error_description":"refresh token reused"}')
            else:
                live[refresh] = False
                rotated = "aud-refresh-" + secrets.token_urlsafe(12)
                live[rotated] = True
                log.append({"resource": resource, "ok": True})
                access = "aud-%s-%d" % (hashlib.sha256((resource or "").encode()).hexdigest()[:8], len(log))
                answer = (200, json.dumps({"access_token": access, "token_type": "Bearer", "expires_in": 600,
                                           "refresh_token": rotated}).encode())
            path = os.path.join(os.path.dirname(StandIn.counts_file), "standin-audience.json")
            with open(path + ".tmp", "w") as f:
                json.dump(log, f)
            os.replace(path + ".tmp", path)
        time.sleep(0.3)   # slow enough that concurrent callers overlap (single-flight is visible)
        return self.reply(*answer)

    def write_dpop_log(self):
        path = os.path.join(os.path.dirname(StandIn.counts_file), "standin-dpop.json")
        with open(path + ".tmp", "w") as f:
            json.dump(DPoP.log, f)
        os.replace(path + ".tmp", path)

    def oidc(self, received):
        base = "http://127.0.0.1:%d/oidc" % self.server.server_address[1]
        issuer = OIDC.issuer(base)
        if self.path.endswith("/.well-known/openid-configuration"):
            return self.reply(200, json.dumps({"issuer": issuer, "jwks_uri": base + "/jwks",
                                               "token_endpoint": base + "/token", "scopes_supported": ["openid"],
                                               "id_token_signing_alg_values_supported": ["RS256", "PS256", "ES256", "EdDSA"]
                                               }).encode())
        if self.path.endswith("/.well-known/oauth-authorization-server") or "/.well-known/" in self.path:
            return self.reply(404, b'{"error":"not_found"}')
        if self.path == "/oidc/jwks":
            self.count("oidc-jwks")
            return self.reply(200, OIDC.published().encode())
        if self.path == "/oidc/sign":
            order = json.loads(received or b"{}")
            return self.reply(200, json.dumps({"token": OIDC.sign(order)}).encode())
        return self.reply(404, b'{"error":"not_found"}')


class DPoP:
    """The stand-in's DPoP state: nonce, seen jti, bindings, and the log of checked proofs."""
    lock = threading.Lock()
    nonce = "dpop-nonce-" + secrets.token_urlsafe(8)
    seen = set()
    refresh_jkt = {}     # refresh token → jkt
    access_jkt = {}      # access token → jkt
    log = []
    log_file = None


def b64decode(text):
    import base64
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def check_proof(proof, method, url, access_token=None):
    """(jkt, None, key) for a valid proof, else (None, why, key): key is the thumbprint of the
    proof's key once its signature verified (else None). jwcrypto verifies the signature."""
    from jwcrypto import jwk, jws
    try:
        header = json.loads(b64decode(proof.split(".")[0]))
        if header.get("typ") != "dpop+jwt" or header.get("alg") != "ES256":
            return None, "typ or alg", None
        public = header.get("jwk") or {}
        if "d" in public:
            return None, "private key in jwk", None
        key = jwk.JWK(**public)
        token = jws.JWS()
        token.deserialize(proof, key=key, alg="ES256")
        claims = json.loads(token.payload)
    except Exception as error:
        return None, "signature: %s" % type(error).__name__, None
    thumbprint = key.thumbprint()
    if claims.get("htm") != method or claims.get("htu") != url:
        return None, "htm/htu %s %s" % (claims.get("htm"), claims.get("htu")), thumbprint
    if abs(time.time() - float(claims.get("iat", 0))) > 60:
        return None, "iat", thumbprint
    if claims.get("jti") in DPoP.seen or not claims.get("jti"):
        return None, "jti replayed", thumbprint
    if access_token is not None:
        import base64
        ath = base64.urlsafe_b64encode(hashlib.sha256(access_token.encode()).digest()).rstrip(b"=").decode()
        if claims.get("ath") != ath:
            return None, "ath", thumbprint
    if claims.get("nonce") != DPoP.nonce and access_token is None:
        return None, "nonce", thumbprint
    DPoP.seen.add(claims["jti"])
    return thumbprint, None, thumbprint


class OIDC:
    """The stand-in issuer's keys, made at start (jwcrypto), and its signing."""
    keys = {}
    published_kids = []
    lock = threading.Lock()

    @staticmethod
    def issuer(base):
        return base

    @classmethod
    def setup(cls):
        from jwcrypto import jwk
        cls.keys = {"rsa": jwk.JWK.generate(kty="RSA", size=2048, kid="rsa-1", use="sig"),
                    "ec": jwk.JWK.generate(kty="EC", crv="P-256", kid="ec-1", use="sig"),
                    "ed": jwk.JWK.generate(kty="OKP", crv="Ed25519", kid="ed-1", use="sig"),
                    # A P-256 key that signs but is never published (kid "ghost").
                    "unpublished": jwk.JWK.generate(kty="EC", crv="P-256", kid="ghost", use="sig")}
        cls.published_kids = ["rsa-1", "ec-1", "ed-1"]

    @classmethod
    def published(cls):
        from jwcrypto import jwk
        with cls.lock:
            keyset = jwk.JWKSet()
            for key in cls.keys.values():
                if key.key_id in cls.published_kids:
                    keyset.add(key)
            return keyset.export(private_keys=False)

    @classmethod
    def sign(cls, order):
        import base64
        import hmac
        from jwcrypto import jwk, jws

        def b64(data):
            return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
        alg = order.get("alg", "RS256")
        claims = json.dumps(order.get("claims", {})).encode()
        header = {"alg": alg, "typ": "JWT"}
        header.update(order.get("header", {}))
        if alg == "none":
            return b64(json.dumps(header).encode()) + "." + b64(claims) + "."
        if alg == "HS256":
            secret = cls.keys["rsa"].export_to_pem()
            header.setdefault("kid", "rsa-1")
            signing_input = b64(json.dumps(header).encode()) + "." + b64(claims)
            return signing_input + "." + b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())
        which = order.get("key") or {"RS256": "rsa", "PS256": "rsa", "ES256": "ec", "EdDSA": "ed"}[alg]
        with cls.lock:
            if which == "rotated":
                kid = "rotated-%d" % (len(cls.keys) + 1)
                params = {"RS256": dict(kty="RSA", size=2048), "PS256": dict(kty="RSA", size=2048),
                          "ES256": dict(kty="EC", crv="P-256"), "EdDSA": dict(kty="OKP", crv="Ed25519")}[alg]
                cls.keys[kid] = jwk.JWK.generate(kid=kid, use="sig", **params)
                cls.published_kids.append(kid)
                which = kid
            key = cls.keys[which]
        header.setdefault("kid", key.key_id)
        if header.get("kid") is None:
            del header["kid"]
        if "crit" in header:
            # jwcrypto will not sign a header it does not understand: signed here with the same key.
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.asymmetric import padding
            signing_input = b64(json.dumps(header).encode()) + "." + b64(claims)
            signature = key.get_op_key("sign").sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
            return signing_input + "." + b64(signature)
        token = jws.JWS(claims)
        token.add_signature(key, alg=alg, protected=json.dumps(header))
        return token.serialize(compact=True)


def start_standin(folder):
    port = free_port()
    with open(os.path.join(folder, "standin-counts.json"), "w") as f:
        f.write("{}")
    process = subprocess.Popen([sys.executable, os.path.abspath(__file__), "standin-serve", str(port),
                                os.path.join(folder, "standin-counts.json")],
                               stdout=subprocess.DEVNULL, stderr=open(os.path.join(folder, "standin.log"), "ab"),
                               stdin=subprocess.DEVNULL, start_new_session=True)
    with open(os.path.join(folder, "standin.pid"), "w") as f:
        f.write(str(process.pid))
    if not wait_ready(f"http://127.0.0.1:{port}/count", process, 20):
        sys.exit("oauth-server: the stand-in did not start")
    return port


def stop_pid(path):
    try:
        with open(path) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        os.unlink(path)
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.05)
    else:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    os.unlink(path)


def stop(folder):
    stop_pid(os.path.join(folder, "server.pid"))
    stop_pid(os.path.join(folder, "standin.pid"))


def approve(folder, user_code, deny=False):
    django_setup(folder)
    from django.contrib.auth import get_user_model
    from oauth2_provider.models import DeviceGrant
    user = get_user_model().objects.get(username="alice")
    status = DeviceGrant.DENIED if deny else DeviceGrant.AUTHORIZED
    changed = DeviceGrant.objects.filter(user_code=user_code).update(status=status, user=user)
    print(json.dumps({"approved": changed}))
    if changed != 1:
        sys.exit(1)


def records(folder):
    """What the server's database says of the token read from stdin (never argv)."""
    import sqlite3
    token = sys.stdin.read().strip()
    checksum = hashlib.sha256(token.encode()).hexdigest()
    db = sqlite3.connect(os.path.join(folder, "db.sqlite3"), timeout=30)
    row = db.execute("SELECT revoked, token_family FROM oauth2_provider_refreshtoken WHERE token_checksum = ?",
                     (checksum,)).fetchone()
    if row:
        revoked, family = row
        size, live = db.execute("SELECT COUNT(*), SUM(revoked IS NULL) FROM oauth2_provider_refreshtoken "
                                "WHERE token_family = ?", (family,)).fetchone()
        # Each refresh grant with rotation adds one row to the family of the first token.
        result = {"kind": "refresh", "revoked": revoked is not None, "family_size": size,
                  "refresh_grants": size - 1, "live_in_family": live or 0}
    elif db.execute("SELECT 1 FROM oauth2_provider_accesstoken WHERE token_checksum = ?", (checksum,)).fetchone():
        result = {"kind": "access", "revoked": False}
    else:
        # Revoked access tokens are deleted: absent means dead (or never issued here).
        result = {"kind": "unknown", "revoked": True}
    print(json.dumps(result))


def password_grant(folder, scope):
    """Tokens for alice through the confidential client (so tests need no browser); JSON on stdout."""
    import base64
    import urllib.parse
    with open(os.path.join(folder, "server.json")) as f:
        facts = json.load(f)
    with open(facts["confidential_secret_file"]) as f:
        secret = f.read().strip()
    with open(facts["password_file"]) as f:
        password = f.read().strip()
    body = urllib.parse.urlencode({"grant_type": "password", "username": "alice", "password": password,
                                   "scope": scope}).encode()
    request = urllib.request.Request(facts["token_endpoint"], data=body, method="POST")
    basic = base64.b64encode(f"{facts['confidential_client_id']}:{secret}".encode()).decode()
    request.add_header("Authorization", "Basic " + basic)
    with urllib.request.urlopen(request, timeout=30) as response:
        sys.stdout.write(response.read().decode())


def resource(folder):
    """GETs the stand-in's DPoP resource with the header lines read from stdin; prints the status."""
    with open(os.path.join(folder, "server.json")) as f:
        facts = json.load(f)
    request = urllib.request.Request(facts["standin"] + "/dpop/resource", method="GET")
    for line in sys.stdin.read().splitlines():
        name, _, value = line.partition(": ")
        if name:
            request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            print(response.status)
    except urllib.error.HTTPError as error:
        print(error.code)


def sign(folder):
    """Asks the stand-in issuer to sign the order read from stdin; prints {"token": ...}."""
    with open(os.path.join(folder, "server.json")) as f:
        facts = json.load(f)
    request = urllib.request.Request(facts["standin"] + "/oidc/sign", data=sys.stdin.buffer.read(), method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        sys.stdout.write(response.read().decode())


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    command, argument = sys.argv[1], sys.argv[2]
    if command == "start":
        start(argument)
    elif command == "stop":
        stop(argument)
    elif command == "approve" and len(sys.argv) >= 4:
        approve(argument, sys.argv[3], deny=len(sys.argv) > 4 and sys.argv[4] == "--deny")
    elif command == "password-grant":
        password_grant(argument, sys.argv[3] if len(sys.argv) > 3 else "read")
    elif command == "records":
        records(argument)
    elif command == "sign":
        sign(argument)
    elif command == "resource":
        resource(argument)
    elif command == "standin-serve":
        StandIn.counts_file = sys.argv[3]
        OIDC.setup()
        server = http.server.ThreadingHTTPServer(("127.0.0.1", int(argument)), StandIn)
        server.serve_forever()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
