"""The page's first load and the instant answer's latency, measured in Chromium (docs/serve.md).

    .venv/bin/python benchmarks/serve_page.py [model] [parameter]

Prints: the server's start (command to printed address), the first load (navigation to the
instant answer shown) and the instant answer's latency (a control changed to the new answer
shown, median and worst of 10 changes)."""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import time

from playwright.sync_api import sync_playwright

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def main(model: str = "pipeline", parameter: str = "consoles") -> None:
    code = "import sys; from simstack.cli.main import main; sys.argv[0] = 'simstack'; main()"
    started = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-c", code, "serve", f"model={model}"], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert server.stdout is not None
        found = re.search(r"http://\S+", server.stdout.readline())
        assert found
        print(f"server start: {time.perf_counter() - started:.2f} s")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page()
            t0 = time.perf_counter()
            page.goto(found.group(0))
            page.locator("#instant-chains").wait_for(timeout=60000)
            print(f"first load: {time.perf_counter() - t0:.2f} s")
            field = f"input[id*='\"{parameter}\"']"
            start = float(page.input_value(field))
            times = []
            for i in range(1, 11):
                before = page.inner_text("#instant-chains")
                t0 = time.perf_counter()
                page.fill(field, f"{start + i:g}")
                page.wait_for_function("t => document.querySelector('#instant-chains') && "
                                       "document.querySelector('#instant-chains').innerText !== t", arg=before)
                times.append(time.perf_counter() - t0)
            print(f"instant answer: median {statistics.median(times) * 1e3:.0f} ms, worst {max(times) * 1e3:.0f} ms "
                  f"(10 changes of {parameter})")
            browser.close()
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main(*sys.argv[1:3])
