"""A headless Chromium driven over the DevTools protocol, for tests of what a person sees.

Only what the report tests need: open a page at a given window size, record every network
request it makes, evaluate an expression in it (the page itself has no script; the test
asks the browser about its layout), and take a screenshot. Chromium runs in a folder of its
own — its profile, its log, its TMPDIR (it leaves ``org.chromium.*`` folders there) and its
HOME (crash-report settings, a dconf cache) —
with no network services of its own (no sync, no component updates, no background
networking), and is ended by PID — its child processes waited for — and its folder removed
when the ``async with`` block ends, however it ends.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import psutil

CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
         "--disable-default-apps", "--mute-audio", "--hide-scrollbars", "--remote-debugging-port=0")
START_TIMEOUT_S = 60
STEP_TIMEOUT_S = 60


def find_chromium() -> str | None:
    """The Chromium binary, or None."""
    for name in CANDIDATES:
        path = name if os.path.isabs(name) else shutil.which(name)
        if path and os.access(path, os.X_OK):
            return path
    return None


class BrowserError(Exception):
    pass


class Chromium:
    """``async with Chromium(binary) as browser: await browser.open(url, 1280, 900)``."""

    def __init__(self, binary: str):
        self.binary = binary
        self.proc: subprocess.Popen | None = None
        self.home: Path | None = None  # everything Chromium writes: profile, log, temp files
        self.events: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._session: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._log: Any = None

    async def __aenter__(self) -> Chromium:
        try:
            await self._start()
        except BaseException:
            await self._stop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stop()

    async def _start(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="chromium-"))
        profile, tmp = self.home / "profile", self.home / "tmp"
        tmp.mkdir()
        self._log = open(self.home / "chromium.log", "wb")  # noqa: SIM115 (closed in _stop)
        self.proc = subprocess.Popen([self.binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                     stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                     env={**os.environ, "TMPDIR": str(tmp), "HOME": str(self.home),
                                          "XDG_CONFIG_HOME": str(self.home / "config"),
                                          "XDG_CACHE_HOME": str(self.home / "cache")})
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if self.proc.poll() is not None:
                raise BrowserError(f"chromium exited {self.proc.returncode} before it listened: {self._log_tail()}")
            if time.monotonic() > deadline:
                raise BrowserError(f"chromium did not listen within {START_TIMEOUT_S} s: {self._log_tail()}")
            await asyncio.sleep(0.05)
        port = int(port_file.read_text().splitlines()[0])
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=STEP_TIMEOUT_S))
        async with self._session.get(f"http://127.0.0.1:{port}/json/list") as response:
            targets = await response.json(content_type=None)
        pages = [t for t in targets if t.get("type") == "page"]
        if not pages:
            raise BrowserError(f"no page target: {targets}")
        self._ws = await self._session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        return Path(self._log.name).read_bytes()[-2000:].decode("utf-8", "replace")

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """One DevTools command; events that arrive meanwhile are kept in ``events``."""
        assert self._ws is not None
        number = next(self._ids)
        await self._ws.send_str(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = await asyncio.wait_for(self._ws.receive_json(), STEP_TIMEOUT_S)
            if message.get("id") == number:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    async def wait_for(self, event: str) -> dict[str, Any]:
        assert self._ws is not None
        seen = next((e for e in self.events if e["method"] == event), None)
        while seen is None:
            message = await asyncio.wait_for(self._ws.receive_json(), STEP_TIMEOUT_S)
            if "method" in message:
                self.events.append(message)
                if message["method"] == event:
                    seen = message
        return seen

    async def open(self, url: str, width: int, height: int) -> None:
        """Load ``url`` in a window of ``width`` × ``height`` CSS px, every request recorded."""
        await self.send("Network.enable")
        await self.send("Page.enable")
        await self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                        mobile=False)
        self.events.clear()
        await self.send("Page.navigate", url=url)
        await self.wait_for("Page.loadEventFired")

    def requests(self) -> list[str]:
        """Every URL the page asked for (the page's own included)."""
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            metrics = await self.send("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 16000),
                                "scale": 1})
        data = await self.send("Page.captureScreenshot", **params)
        path.write_bytes(base64.b64decode(data["data"]))
        return path

    async def _stop(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._session is not None:
            await self._session.close()
        if self.proc is not None:
            await asyncio.to_thread(_end, self.proc)
        if self._log is not None:
            self._log.close()
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)


def _end(proc: subprocess.Popen) -> None:
    """End Chromium by its PID, then every process it started, and wait for each."""
    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        family = []
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
    _, alive = psutil.wait_procs(family, timeout=10)
    for child in alive:
        try:
            child.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(alive, timeout=10)
