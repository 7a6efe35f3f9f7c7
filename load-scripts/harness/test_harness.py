"""The harness's own checks, the parts that need no service of this repository:
`python3 -m unittest harness.test_harness`
from load-scripts/ (ingest/ci.sh runs them first)."""

import io
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from unittest import mock

from . import ingest, metrics, procs, script, signing, storm, tools

EXPOSITION = """# HELP faultline_requests_started_total Requests started.
faultline_requests_started_total 12
faultline_requests_total{outcome="ok"} 7
faultline_requests_total{outcome="handled"} 3
faultline_requests_total{outcome="rejected"} 1
faultline_in_flight 1
faultline_errors_total{route="/a",code="bad-signature",status="401"} 2
faultline_errors_total{route="/b/{inbox}",code="bad-signature",status="401"} 1
webhook_ingest_ignored_events_total{vcs="github"} 4
webhook_ingest_ignored_events_total{vcs="gitlab"} 5
"""


class MetricsTest(unittest.TestCase):
    def test_an_exposition_is_read_series_by_series(self):
        m = metrics.Metrics(EXPOSITION)
        self.assertEqual(m.started, 12)
        self.assertEqual(m.in_flight, 1)
        self.assertEqual(m.outcomes(), {"ok": 7, "handled": 3, "rejected": 1, "service_error": 0,
                                        "panicked": 0, "aborted": 0, "cancelled": 0})
        self.assertEqual(m.errors(), {("bad-signature", "401"): 3})
        self.assertEqual(m.total("webhook_ingest_ignored_events_total"), 9)
        self.assertEqual(m.total("faultline_errors_total", route="/a"), 2)
        self.assertEqual(m.total("faultline_errors_total", route="/b/{inbox}"), 1)
        self.assertEqual(m.value('faultline_requests_total{outcome="ok"}'), 7)

    def test_started_reconciles_with_the_outcomes_and_what_is_in_flight(self):
        m = metrics.Metrics(EXPOSITION)
        self.assertIsNone(metrics.unreconciled(m.started, m.outcomes(), m.in_flight))
        # One request started and never finished, or finished twice, is caught.
        self.assertIsNotNone(metrics.unreconciled(m.started + 1, m.outcomes(), m.in_flight))
        self.assertIsNotNone(metrics.unreconciled(m.started, m.outcomes(), 0))


class SigningTest(unittest.TestCase):
    def test_the_hex_signature_is_githubs(self):
        # The example of GitHub's documentation on validating deliveries.
        self.assertEqual(signing.hex_signature("It's a Secret to Everybody", b"Hello, World!"),
                         "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")

    def test_each_provider_signs_with_its_own_headers(self):
        body = b"{}"
        hex_tag = signing.hex_signature("s", body)
        self.assertEqual(signing.provider_headers("github", "s", "d", body)["x-hub-signature-256"],
                         "sha256=" + hex_tag)
        self.assertEqual(signing.provider_headers("gitlab", "s", "d", body)["x-gitlab-token"], "s")
        self.assertEqual(signing.provider_headers("bitbucket", "s", "d", body)["x-hub-signature"],
                         "sha256=" + hex_tag)
        forgejo = signing.provider_headers("forgejo", "s", "d", body)
        self.assertEqual((forgejo["x-forgejo-signature"], forgejo["x-gitea-signature"]),
                         (hex_tag, hex_tag))


class StormTest(unittest.TestCase):
    def test_clients_that_never_overlap_fail(self):
        with self.assertRaises(Exception):
            storm.Tally().check({}, clients=2)

    def test_a_tally_off_by_one_fails(self):
        tally = storm.Tally()
        for _ in range(2):
            tally.begin()
        tally.end("ok")
        tally.end("ok")
        tally.check({"ok": 2}, clients=2)
        with self.assertRaises(Exception):
            tally.check({"ok": 3}, clients=2)

    def test_parallel_clients_all_run_at_once(self):
        # Each client waits as a request does, so the others run meanwhile.
        def client(i):
            time.sleep(0.05)
            return i * i

        self.assertEqual(storm.run_parallel(4, client), [0, 1, 4, 9])


class StartTogetherTest(unittest.TestCase):
    class Started:
        def __init__(self, name):
            self.name, self.stopped = name, False

        def stop(self):
            self.stopped = True

    def test_servers_start_at_once_and_come_back_in_order(self):
        # Each start waits for the other: started one after the other, neither would return.
        both = threading.Barrier(2, timeout=5)

        def start(name):
            both.wait()
            return self.Started(name)

        started = procs.start_together([lambda: start("a"), lambda: start("b")])
        self.assertEqual([s.name for s in started], ["a", "b"])

    def test_one_failing_start_stops_the_others(self):
        ok = self.Started("ok")

        def fails():
            raise procs.Failure("no address")

        with self.assertRaises(procs.Failure):
            procs.start_together([lambda: ok, fails])
        self.assertTrue(ok.stopped)


class ToolsTest(unittest.TestCase):
    def test_a_missing_tool_fails_when_tools_are_required(self):
        with mock.patch.dict(os.environ, {tools.REQUIRE_TOOLS_ENV: "1"}):
            self.assertEqual(tools.verdict("t", "sh", "no-such-tool-here"), "fail")
        with mock.patch.dict(os.environ, {tools.REQUIRE_TOOLS_ENV: "0"}):
            self.assertEqual(tools.verdict("t", "no-such-tool-here"), "skip")
        self.assertIsNone(tools.verdict("t", "sh"))

    def test_postgresql_is_found_by_its_binaries_newest_version_last(self):
        with tempfile.TemporaryDirectory() as root:
            with mock.patch.object(tools, "POSTGRESQL_ROOT", Path(root)):
                self.assertEqual(tools.missing("sh", tools.POSTGRESQL), [tools.POSTGRESQL])
                for version in ("9.6", "16", "13"):
                    (Path(root) / version / "bin").mkdir(parents=True)
                    (Path(root) / version / "bin" / "initdb").touch()
                self.assertEqual(tools.missing("sh", tools.POSTGRESQL), [])
                self.assertEqual([p.parent.name for p in tools.postgresql_bins()],
                                 ["9.6", "13", "16"])


class IngestTest(unittest.TestCase):
    def test_the_scenarios_environment_reads_back_what_was_written(self):
        values = ingest.shell_values({"instance": "in_1", "key": "k 'quoted' $HOME", "digest": "dg_1",
                                      "inboxes": {"github": {"id": "ib_1", "secret": "s\"; rm -rf"}}})
        with tempfile.TemporaryDirectory() as work:
            path = Path(work) / "env"
            ingest.write_shell_env(values, str(path), "http://127.0.0.1:1")
            self.assertEqual(path.stat().st_mode & 0o777, 0o600)
            self.assertEqual(ingest.read_shell_env(path), values)
        self.assertEqual(values["GITHUB_SECRET"], "s\"; rm -rf")

    def test_the_profile_is_debug_release_or_a_failure(self):
        for profile, release in (("", False), ("debug", False), ("release", True)):
            with mock.patch.dict(os.environ, {ingest.PROFILE_ENV: profile}):
                self.assertEqual(ingest.release_profile(), release)
        with mock.patch.dict(os.environ, {ingest.PROFILE_ENV: "fast"}):
            with self.assertRaises(procs.Failure):
                ingest.release_profile()


class ScriptTest(unittest.TestCase):
    def run_script(self, body) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        status = 0
        with redirect_stdout(out), redirect_stderr(err):
            try:
                script.main("t", body)
            except SystemExit as exit:
                status = exit.code
        return status, out.getvalue(), err.getvalue()

    def test_a_failed_run_says_why_and_stops_its_server_by_pid(self):
        started = []

        def body(run):
            port = procs.free_port()
            server = run.add(procs.Server("http", [sys.executable, "-m", "http.server", "--bind",
                                                   "127.0.0.1", port], run.work, port=port))
            started.append((server, run.work))
            run.check(False, "the first check")
            raise procs.Failure("the second")

        status, out, err = self.run_script(body)
        (server, work), = started
        self.assertEqual(status, 1)
        self.assertNotIn("passed", out)
        self.assertIn("t: the first check", err)
        self.assertIn("t: the second", err)
        self.assertIn("--- http's log ends", err)
        self.assertFalse(server.alive())
        self.assertFalse(work.exists())

    def test_a_server_stops_on_sigint_when_its_script_ignores_sigint(self):
        # A script started as a background job runs with SIGINT ignored; a server stopped by
        # SIGINT (valgrind's lab, a postmaster) must not inherit that and hang.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            with tempfile.TemporaryDirectory() as work:
                port = procs.free_port()
                server = procs.Server("http", [sys.executable, "-m", "http.server", "--bind",
                                               "127.0.0.1", port], Path(work), port=port,
                                      stop_signal=signal.SIGINT, stop_timeout_s=10)
                server.stop()
                self.assertFalse(server.alive())
        finally:
            signal.signal(signal.SIGINT, previous)

    def test_a_run_stopped_by_sigterm_stops_its_server_first(self):
        # A CI timeout ends a script with SIGTERM: its servers must not outlive it.
        with tempfile.TemporaryDirectory() as work:
            pid_file = Path(work) / "pid"
            child = subprocess.Popen([sys.executable, "-c", f"""
import sys, time
from pathlib import Path
from harness import procs, script

def body(run):
    port = procs.free_port()
    server = run.add(procs.Server("http", [sys.executable, "-m", "http.server", "--bind",
                                           "127.0.0.1", port], run.work, port=port))
    Path({str(pid_file)!r}).write_text(str(server.pid))
    time.sleep(60)

script.main("t", body)
"""], cwd=Path(__file__).resolve().parents[1], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
            try:
                procs.wait_until(lambda: pid_file.exists() and pid_file.read_text(), 30,
                                 "the script's server", lambda: child.poll() is None)
                child.terminate()
                self.assertEqual(child.wait(30), 128 + 15)
            finally:
                child.kill()
                child.wait()
                outlived = pid_file.exists() and Path(f"/proc/{pid_file.read_text()}").exists()
                if outlived:
                    os.kill(int(pid_file.read_text()), 9)
            self.assertFalse(outlived, "the server outlived its script")

    def test_the_command_line_is_release_and_arguments_of_the_pattern(self):
        self.assertEqual(script.parse(["300", "--release"], "u", "[0-9]+"), (True, ["300"]))
        self.assertEqual(script.parse([], "u"), (False, []))
        for bad in (["many"], ["300"], ["--debug"]):
            with self.assertRaisesRegex(SystemExit, "^usage: u$"):
                script.parse(bad, "u", "[0-9]+" if bad == ["many"] else None)

    def test_a_check_that_fails_fails_the_run_at_its_end(self):
        status, out, err = self.run_script(lambda run: run.check(1 + 1 == 3, "arithmetic"))
        self.assertEqual((status, out), (1, ""))
        self.assertIn("1 checks failed", err)
        status, _, err = self.run_script(
            lambda run: subprocess.run([sys.executable, "-c", "raise SystemExit(3)"], check=True))
        self.assertEqual(status, 1)
        self.assertIn("returned non-zero exit status 3", err)
        status, out, _ = self.run_script(lambda run: run.check(True, "never said"))
        self.assertEqual(status, 0)
        self.assertTrue(out.startswith("t: passed in "))


if __name__ == "__main__":
    unittest.main()
