"""A minimal headless-Chromium driver over the Chrome DevTools Protocol (websocket-client), for
tests that use a page as a person would: type into fields, click, read what is shown, screenshot.
Only 127.0.0.1 addresses are opened; every wait is bounded."""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Browser:
    """One headless Chromium with one page. Use as a context manager."""

    def __init__(self, profile_dir: Path, width: int = 1280, height: int = 1500) -> None:
        import websocket

        exe = find_chromium()
        if exe is None:
            raise RuntimeError("no chromium on PATH (apt-get install chromium)")
        self.proc = subprocess.Popen(
            [
                exe,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--disable-extensions",
                "--disable-background-networking",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--remote-allow-origins=*",
                f"--user-data-dir={profile_dir}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # its own process group: close() ends the renderers and helpers too
        port_file = Path(profile_dir) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint within 30 s")
            time.sleep(0.2)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as resp:
            pages = [t for t in json.load(resp) if t.get("type") == "page"]
        self.ws = websocket.create_connection(
            pages[0]["webSocketDebuggerUrl"], timeout=30, suppress_origin=True
        )
        self._ids = itertools.count(1)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """End chromium and every process it started (its process group), waiting until none is
        left (bounded)."""
        if getattr(self, "ws", None) is not None:
            try:
                self.ws.send(json.dumps({"id": 0, "method": "Browser.close", "params": {}}))
            except Exception:
                pass
            self.ws.close()
            self.ws = None
        pgid = self.proc.pid  # start_new_session: the group is chromium's own
        for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline:
                self.proc.poll()  # reap chromium itself; its children are reaped by init
                if not group_alive(pgid):
                    return
                time.sleep(0.1)
        self.proc.poll()

    def send(self, method: str, **params: Any) -> dict:
        """Call a DevTools method and return its result (events in between are skipped)."""
        msg_id = next(self._ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def js(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails'].get('text')}: {expression}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float, what: str) -> Any:
        """Poll a script until it returns something truthy."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.25)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")

    def open(self, url: str) -> None:
        assert url.startswith("http://127.0.0.1:"), "tests only open pages on this machine"
        self.send("Page.enable")
        self.send("Page.navigate", url=url)

    def type_into(self, selector: str, text: str) -> None:
        """Clear a text field and type `text` into it as keyboard input."""
        self.js(
            f"(() => {{ const el = document.querySelector({json.dumps(selector)}); el.focus(); el.select(); }})()"
        )
        self.send(
            "Input.dispatchKeyEvent",
            type="keyDown",
            key="Backspace",
            code="Backspace",
            windowsVirtualKeyCode=8,
        )
        self.send(
            "Input.dispatchKeyEvent", type="keyUp", key="Backspace", code="Backspace", windowsVirtualKeyCode=8
        )
        self.send("Input.insertText", text=text)

    def click(self, selector: str, timeout: float = 10) -> None:
        """A real mouse click at the centre of the element, once the element has stopped moving
        and nothing covers its centre (a text field that grows as it is typed into moves the
        button below it a frame later; a click at the old place would hit nothing)."""
        locate = (
            f"(() => {{ const el = document.querySelector({json.dumps(selector)}); "
            "el.scrollIntoView({block: 'center'}); const r = el.getBoundingClientRect(); "
            "const x = r.x + r.width / 2, y = r.y + r.height / 2; "
            "const hit = document.elementFromPoint(x, y); "
            "return [x, y, !!hit && (hit === el || el.contains(hit))]; })()"
        )
        deadline = time.monotonic() + timeout
        last = None
        while True:
            box = self.js(locate)
            if box[2] and box == last:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"{selector} did not settle in a clickable place within {timeout:.0f} s")
            last = box
            time.sleep(0.2)
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path


def group_alive(pgid: int) -> bool:
    """Whether a process of the group `pgid` is still running (zombies do not count)."""
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False
