"""Headless Chromium driven over the DevTools protocol, standard library only.

`--dump-dom` cannot run a script in the page; the protocol can. Chromium reads the protocol
on its fd 3 and writes on its fd 4 (`--remote-debugging-pipe`), one JSON message per
NUL-terminated record. Every wait is bounded by one deadline for the whole session.
"""

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time

# Above the fds the child is given (3 and 4), so placing them there cannot overwrite one.
SPARE_FD_FLOOR = 10

# Headless, on a throwaway profile, and kept off the network: no update, sync or component
# checks, and every address but 127.0.0.1 resolves to nothing.
CHROMIUM = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-extensions", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-default-apps",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]


def kill_group(process):
    """Kills `process` and every process it started: Chromium runs a tree of them, and each
    is in the session `start_new_session` gave the first."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


class CdpError(Exception):
    """The browser failed, answered with an error, or did not answer in time."""


def _spare(fd):
    """`fd` moved to a free number at or above SPARE_FD_FLOOR, closed on exec."""
    spare = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, SPARE_FD_FLOOR)
    os.close(fd)
    return spare


class Browser:
    """One headless Chromium with one page of `width` x `height` CSS pixels."""

    def __init__(self, width, height, timeout_s):
        self.deadline = time.monotonic() + timeout_s
        self.profile = tempfile.mkdtemp(prefix="faultline-errors-page-cdp.")
        to_child, self.to_browser = (_spare(fd) for fd in os.pipe())
        self.from_browser, from_child = (_spare(fd) for fd in os.pipe())

        def place_pipes():
            # Runs in the child before exec: the pipes at the numbers Chromium reads and
            # writes; dup2 leaves them open across exec, every other fd of ours is CLOEXEC.
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self.process = subprocess.Popen(
            # Scrollbars shown, as a laptop shows them: the page must fit beside them.
            [*CHROMIUM, "--remote-debugging-pipe", f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=place_pipes, start_new_session=True)
        os.close(to_child)
        os.close(from_child)
        self.next_id = 0
        self.buffer = b""
        self.events = []
        self.session = None
        try:
            # A page of our own: the one Chromium opens at start may not be listed yet.
            page = self.call("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=page,
                                     flatten=True)["sessionId"]
            self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                      deviceScaleFactor=1, mobile=False)
            self.call("Page.enable")
        except BaseException:
            self.close()
            raise

    def _read_message(self):
        while b"\0" not in self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_browser], [], [], left)[0]:
                raise CdpError("chromium did not answer in time")
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise CdpError("chromium closed its pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, **params):
        """Sends one command to the page (the browser before attaching); returns its result."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply["result"]
            if "method" in reply:
                self.events.append(reply["method"])

    def open(self, url):
        """Loads `url` and waits for its load event, and for the document to be that URL's:
        a late load event of the blank page cannot pass for it."""
        self.events.clear()
        navigated = self.call("Page.navigate", url=url)
        if navigated.get("errorText"):
            raise CdpError(f"{url}: {navigated['errorText']}")
        while "Page.loadEventFired" not in self.events:
            reply = self._read_message()
            if "method" in reply:
                self.events.append(reply["method"])
        loaded = "document.readyState === 'complete' && location.href === %s" % json.dumps(url)
        while not self.evaluate(loaded):
            if time.monotonic() > self.deadline:
                raise CdpError(f"{url} did not finish loading in time")
            time.sleep(0.05)

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page, as JSON."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise CdpError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path):
        """The whole page, as wide as the window, saved as PNG."""
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        data = self.call("Page.captureScreenshot", format="png", clip=clip,
                         captureBeyondViewport=True)
        with open(path, "wb") as out:
            out.write(base64.b64decode(data["data"]))

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def close(self):
        """Closes the browser, killing it if it does not exit in time, and its profile."""
        try:
            if self.process.poll() is None:
                self.session = None
                os.write(self.to_browser, b'{"id":0,"method":"Browser.close"}\0')
                self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            kill_group(self.process)
            for fd in (self.to_browser, self.from_browser):
                os.close(fd)
            shutil.rmtree(self.profile, ignore_errors=True)
