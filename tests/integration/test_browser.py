"""The headless-Chromium driver of the browser tests (tests/support/browser.py) leaves no process behind."""

from __future__ import annotations

import pytest


def test_browser_close_leaves_no_process(tmp_path):
    from support.browser import Browser, find_chromium, group_alive

    if find_chromium() is None:
        pytest.skip("chromium is not installed")
    browser = Browser(tmp_path / "profile")
    assert browser.js("1 + 1") == 2
    pgid = browser.proc.pid
    assert group_alive(pgid)
    browser.close()
    assert not group_alive(pgid)
