"""`dagster dev` started as a user starts it (`./run dagster dev` in a new login shell) and a headless
Chromium (Debian's, driven by Playwright) to read its pages."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from taxi_demo.local_cluster.services import free_port

CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CHROMIUM = "/usr/bin/chromium"
# As root, without a sandbox; without the background-networking flags Chromium keeps calling Google's
# hosts, which a closed network refuses.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
START_SECONDS = 300
STOP_SECONDS = 60


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def dagster_dev(project: Path, log: Path) -> Iterator[str]:
    """``./run dagster dev`` in ``project`` on a free loopback port; its URL once the webserver and the
    code location answer; stopped as Ctrl-C stops it (then killed, with everything it started)."""
    port = free_port()
    environment = {"HOME": str(Path.home()), "LANG": "C.UTF-8", "CI": "true", "PATH": CLEAN_PATH}
    command = f"cd {project} && exec ./run dagster dev --host 127.0.0.1 --port {port}"
    with log.open("wb") as output:
        process = subprocess.Popen(
            ["env", "-i", *(f"{key}={value}" for key, value in environment.items()), "bash", "-lc", command],
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_SECONDS
        while not _answers(f"{url}/server_info"):
            if process.poll() is not None:
                raise RuntimeError(f"dagster dev exited with {process.returncode}: {log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"dagster dev did not answer within {START_SECONDS} s: {log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        _stop(process)


def _stop(process: subprocess.Popen) -> None:
    for stop_with in (signal.SIGINT, signal.SIGKILL):
        try:
            os.killpg(process.pid, stop_with)
        except ProcessLookupError:
            return
        try:
            process.wait(STOP_SECONDS)
            return
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def browser_page(timeout_ms: int = 60_000) -> Iterator:
    """A page of a fresh headless Chromium (a new profile), with the tests' default timeout."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.set_default_timeout(timeout_ms)
            # Dagster's invitation to join its community opens at a moment of its own (over a dialog the test
            # opened, if it comes late); a browser where a person already dismissed it does not show it.
            page.add_init_script("window.localStorage.setItem('communityNux', JSON.stringify(true))")
            yield page
        finally:
            browser.close()


# A laptop's browser window: what a table entry and a chart of an asset's page must fit.
LAPTOP = {"width": 1400, "height": 900}
# The box of ``element`` a person sees: cut by every scrolling or clipping box around it and by the window.
_VISIBLE_BOX = """element => {
    let left = 0, right = window.innerWidth;
    for (let box = element.parentElement; box; box = box.parentElement) {
        if (getComputedStyle(box).overflowX === 'visible') continue;
        const rect = box.getBoundingClientRect();
        left = Math.max(left, rect.left); right = Math.min(right, rect.right);
    }
    return [left, right];
}"""


@contextmanager
def laptop_screen(page) -> Iterator:
    """``page`` at a 1,400 x 900 window for the block, then at the size it had."""
    before = page.viewport_size
    page.set_viewport_size(LAPTOP)
    try:
        yield page
    finally:
        page.set_viewport_size(before)


def open_latest_materialization(page, url: str, asset: str) -> None:
    """The asset's Events tab, which opens on its latest materialization and its metadata."""
    page.goto(f"{url}/assets/{asset}?view=events")
    page.wait_for_load_state("networkidle")
    page.get_by_text("Metadata", exact=True).first.wait_for()


def metadata_row(page, key: str):
    """The metadata table's row of ``key``."""
    return page.locator("tr").filter(has=page.get_by_text(key, exact=True)).first


def table_columns_shown(page, key: str) -> tuple[int, int]:
    """How many of the columns of ``key``'s table entry a person sees whole, and how many it has."""
    table = metadata_row(page, key).locator("table").first
    table.wait_for()
    left, right = table.evaluate(_VISIBLE_BOX)
    edges = table.locator("th").evaluate_all(
        "cells => cells.map(cell => [cell.getBoundingClientRect().left, cell.getBoundingClientRect().right])"
    )
    return sum(1 for start, end in edges if start >= left - 1 and end <= right + 1), len(edges)


def chart_in_its_dialog(page, key: str) -> dict:
    """``key``'s *Show Markdown* dialog opened: the chart's own width, the width it is drawn at, and whether a
    person sees it whole (nothing past the dialog's edges); the dialog closed again."""
    metadata_row(page, key).get_by_text("Show Markdown").click()
    dialog = page.get_by_role("dialog")
    image = dialog.locator("img").first
    image.wait_for()
    page.wait_for_function("image => image.complete && image.naturalWidth > 0", arg=image.element_handle())
    left, right = image.evaluate(_VISIBLE_BOX)
    box = image.bounding_box()
    natural = image.evaluate("image => image.naturalWidth")
    dialog.get_by_role("button", name="Close").click()
    dialog.wait_for(state="detached")
    whole = box["x"] >= left - 1 and box["x"] + box["width"] <= right + 1
    return {"natural_width": natural, "drawn_width": round(box["width"]), "whole": whole}
