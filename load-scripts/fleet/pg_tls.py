#!/usr/bin/env python3
"""TLS from webhook-ingest to a real PostgreSQL with ssl=on, all on 127.0.0.1 (pg-tls.sh).

Makes a CA and a server certificate (for 127.0.0.1 alone) with openssl, and a second CA that
signed nothing; starts a throwaway PostgreSQL with that certificate and ssl=on. Then starts
the service against it once per case and checks:
  - sslmode=verify-full with --db-ca (here through WEBHOOK_INGEST_DB_CA) naming the right CA
    connects, serves /health, and its connections to the database are encrypted;
  - sslmode=verify-full with the wrong CA stops at start-up with an error naming the
    certificate's unknown issuer;
  - sslmode=verify-full against a host name the certificate does not name is refused too;
  - sslmode=require (no CA) and the default (prefer) connect encrypted, sslmode=disable
    connects in plain text;
  - the database password is in no output of any run.
Everything it starts is stopped by PID at the end.

    pg_tls.py [--release]
"""

import os
import shutil
import subprocess

import nodes
from harness import postgres
from harness.client import get
from harness.procs import Failure, server_env, wait_until

# A refused start-up ends within seconds; this bounds one that hangs instead.
REFUSAL_TIMEOUT_S = 60
# A reload of the configuration takes effect within moments.
SSL_ON_TIMEOUT_S = 10


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def certificates(certs):
    """A CA, a server certificate it signs for 127.0.0.1 only, and a CA that signed nothing."""
    certs.mkdir()
    for name, subject in (("ca", "faultline test CA"), ("wrong-ca", "faultline wrong CA")):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                f"/CN={subject}", "-keyout", certs / f"{name}.key", "-out", certs / f"{name}.crt")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", certs / "server.key", "-out", certs / "server.csr")
    (certs / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", certs / "server.csr", "-CA", certs / "ca.crt",
            "-CAkey", certs / "ca.key", "-CAcreateserial", "-days", "1",
            "-extfile", certs / "server.ext", "-out", certs / "server.crt")


def ssl_on(run, pg, certs):
    # PostgreSQL reads its key only if the server's user owns it and nobody else can read it.
    for name in ("server.crt", "server.key"):
        shutil.copy(certs / name, pg.dir / name)
        if pg.root:
            shutil.chown(pg.dir / name, "postgres", "postgres")
    os.chmod(pg.dir / "server.key", 0o600)
    run.sql(f"ALTER SYSTEM SET ssl_cert_file = '{pg.dir / 'server.crt'}'")
    run.sql(f"ALTER SYSTEM SET ssl_key_file = '{pg.dir / 'server.key'}'")
    run.sql("ALTER SYSTEM SET ssl = on")
    run.sql("SELECT pg_reload_conf()")
    try:
        wait_until(lambda: run.sql("SHOW ssl") == [["on"]], SSL_ON_TIMEOUT_S, "ssl on")
    except Failure:
        raise Failure("postgres did not turn ssl on") from None
    (version,), = run.sql("SHOW server_version")
    run.say(f"postgres {version} on 127.0.0.1:{pg.port} with ssl=on")


def with_ca(ca):
    """The CA file the next node trusts, through its environment variable; none when None."""
    os.environ.pop("WEBHOOK_INGEST_DB_CA", None)
    if ca is not None:
        os.environ["WEBHOOK_INGEST_DB_CA"] = str(ca)


def expect_serves(run, name, url, ca, want):
    """Node NAME on URL trusting CA serves /health, its connections to the database
    encrypted or not (WANT: t or f)."""
    with_ca(ca)
    node = run.node(name, url)
    status, _ = get(node.url, "/health")
    (got,), = run.sql("SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a "
                      f"USING (pid) WHERE a.usename = '{postgres.ROLE}'")
    node.stop()
    if status != 200:
        raise Failure(f"{name}: /health answered {status}")
    if got != want:
        raise Failure(f"{name}: connections encrypted: {got}, expected {want}")
    run.say(f"{name}: serves, connections encrypted: {got}")


def expect_refused(run, name, url, ca, pattern):
    """The service on URL trusting CA stops at start-up, saying PATTERN on stderr."""
    with_ca(ca)
    out, log = run.work / f"{name}.out", run.work / f"{name}.log"
    with open(out, "w") as stdout, open(log, "w") as stderr:
        try:
            status = subprocess.run([run.binary, "--port", "0", "--db", url], stdout=stdout,
                                    stderr=stderr, env=server_env(),
                                    timeout=REFUSAL_TIMEOUT_S).returncode
        except subprocess.TimeoutExpired:
            status = None
    if status in (0, None) or out.read_text():
        raise Failure(f"{name}: expected a refusal at start-up, got status {status}")
    said = log.read_text(errors="replace")
    if pattern not in said:
        raise Failure(f"{name}: the start-up error does not say `{pattern}`:\n{said}")
    run.say(f"{name}: refused at start-up: {said.strip().splitlines()[-1]}")


def scenario(run, _args):
    certs = run.work / "certs"
    certificates(certs)
    pg = run.postgres()
    ssl_on(run, pg, certs)
    url = pg.url
    expect_serves(run, "verify-full", f"{url}?sslmode=verify-full", certs / "ca.crt", "t")
    expect_serves(run, "require", f"{url}?sslmode=require", None, "t")
    expect_serves(run, "prefer", url, None, "t")
    expect_serves(run, "disable", f"{url}?sslmode=disable", None, "f")
    expect_refused(run, "wrong-ca", f"{url}?sslmode=verify-full", certs / "wrong-ca.crt",
                   "UnknownIssuer")
    expect_refused(run, "no-ca", f"{url}?sslmode=verify-full", None, "UnknownIssuer")
    # localhost reaches the same server, but the certificate names 127.0.0.1 only.
    wrong_host = url.replace("@127.0.0.1:", "@localhost:")
    expect_refused(run, "wrong-host", f"{wrong_host}?sslmode=verify-full", certs / "ca.crt",
                   "not valid for name")
    leaked = [p.name for p in sorted(run.work.glob("*.out")) + sorted(run.work.glob("*.log"))
              if pg.password in p.read_text(errors="replace")]
    if leaked:
        raise Failure(f"the database password is in {', '.join(leaked)}")
    run.say("ok, and the password is in no output")


if __name__ == "__main__":
    nodes.main("pg-tls", scenario, "pg-tls.sh [--release]", need=("openssl", "python3", nodes.POSTGRESQL))
