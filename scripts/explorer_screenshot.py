"""The README's screenshot of the explorer: serve a run, translate a sentence in headless Chromium,
hover an output word, save the page.

    .venv/bin/python scripts/explorer_screenshot.py demo docs/images/explorer.png \
        --text "A little girl climbing into a wooden playhouse."

Needs Debian's chromium and the playwright package (`pip install -e .[dev]`), as the browser test.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, server: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"attnkit serve exited with status {server.returncode}")
        try:
            urllib.request.urlopen(url + "/healthz", timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    sys.exit(f"attnkit serve did not answer on {url} within {seconds:g} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("out")
    parser.add_argument("--text", default="A little girl climbing into a wooden playhouse.")
    parser.add_argument("--hover", type=int, default=2, help="which output token to hover (0-based)")
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "attnkit", "serve", args.run, "--port", str(port)])
    try:
        wait_until_up(url, server)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1100, "height": 800})
            page.goto(url + "/")
            page.wait_for_selector("#model option", state="attached")
            page.fill("#text", args.text)
            page.click("#submit")
            card = page.locator(".attn-card")
            card.wait_for()
            card.locator(".attn-queries .attn-token").nth(args.hover).hover()
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=args.out, full_page=True)
            browser.close()
        print(f"wrote {args.out}")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
