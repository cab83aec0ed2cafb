"""The HTML report in a real browser: what a person sees at 1280 px.

Headless Chromium (Debian's ``chromium``; ``make browser`` installs it where it can) opens
``report.html`` for a single run and for a leaderboard, both with hostile text in their
evidence, and the test asks it about the layout over the DevTools protocol: the page does
not scroll sideways, every check column of every matrix is on screen, a failed run's
timeline is drawn, evidence links land on their timeline mark, table headers stick, and the
page made no request but for itself and holds no script. A screenshot of each (the window,
and the whole page) is kept in the test's temp folder — set ``STOPBENCH_SCREENSHOTS`` to a
folder to keep copies after the session's temp folder is removed. Without Chromium the
test is skipped, saying why.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest
from browser import Chromium, find_chromium

from harness.model import Evidence, Outcome, RunResult
from harness.report import render_html
from harness.report.load import parse_results
from harness.report.writer import results_text

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium to render the HTML report in: install Debian's chromium "
                             "(`make browser`, or apt-get install chromium) to run this test")
WIDTH, HEIGHT = 1280, 900
# Markup that would fetch, run or restyle something if it were not escaped.
NASTY = ('<img src="http://example.invalid/x.png"><script>fetch("http://example.invalid/")</script>'
         '</svg></details><style>body { width: 5000px }</style><a href="javascript:alert(1)">x</a>')
NASTY_WORD = "x" * 300  # a word too long for any column


def with_nasty_evidence(run: RunResult) -> RunResult:
    """The run with unescapable-looking text in a failed check's evidence and summary."""
    tasks = []
    for t in run.tasks:
        checks = tuple(
            dataclasses.replace(c, evidence=Evidence(f"{c.evidence.summary} {NASTY} {NASTY_WORD}", (
                *c.evidence.items, {"note": NASTY, "request": 2, "blob": NASTY_WORD})))
            if c.outcome is Outcome.FAIL else c for c in t.checks)
        tasks.append(dataclasses.replace(t, checks=checks))
    return dataclasses.replace(run, tasks=tuple(tasks))


def as_written(*runs: RunResult) -> list[RunResult]:
    return [parse_results(json.loads(results_text(r))) for r in runs]


LAYOUT = """(() => {
  const doc = document.documentElement;
  const box = e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top,
                                                                   width: r.width, height: r.height}; };
  const matrices = [...document.querySelectorAll('table.matrix')].map(t => ({
    checks: [...t.querySelectorAll('th.check')].map(th => ({id: th.querySelector('a').textContent, ...box(th)})),
    box: box(t)}));
  const failed = [...document.querySelectorAll('details.run[open]')].map(d => {
    const svg = d.querySelector('svg.timeline');
    return {id: d.id, timeline: svg ? {...box(svg), marks: svg.querySelectorAll('g.mark').length} : null};
  });
  return {scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth, matrices, failed,
          scripts: document.scripts.length, images: document.images.length,
          wide: [...document.querySelectorAll('body *')]
                .filter(e => e.getBoundingClientRect().right > doc.clientWidth + 1)
                .slice(0, 5).map(e => e.tagName + '.' + e.className)};
})()"""


async def jump(browser: Chromium, target: str) -> dict:
    """Follow an in-page link as a click would, and say where its target landed."""
    return await browser.evaluate(f"""(() => {{
      location.hash = {json.dumps('#' + target)};
      const r = document.getElementById({json.dumps(target)}).getBoundingClientRect();
      return {{top: r.top, bottom: r.bottom, height: window.innerHeight,
               target: document.querySelector(':target') ? document.querySelector(':target').id : null}};
    }})()""")


async def sticky(browser: Chromium) -> dict:
    """Scroll a little into the first check matrix: its header row should stay at the top."""
    return await browser.evaluate("""(() => {
      const table = document.querySelector('table.matrix');
      window.scrollTo(0, table.getBoundingClientRect().top + window.scrollY + 40);
      const th = table.querySelector('thead th').getBoundingClientRect();
      return {header_top: th.top, table_top: table.getBoundingClientRect().top};
    })()""")


def keep(shots: list[Path]) -> None:
    folder = os.environ.get("STOPBENCH_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        for shot in shots:
            shutil.copy2(shot, Path(folder) / shot.name)


@pytest.mark.slow(reason="a headless Chromium renders the report")
@pytest.mark.parametrize("case", ["single", "leaderboard"])
async def test_a_person_sees_the_whole_report_at_1280_px(case, run, rival, tmp_path, capsys):
    runs = as_written(with_nasty_evidence(run), *((rival,) if case == "leaderboard" else ()))
    page = tmp_path / "report.html"
    page.write_text(render_html(runs), encoding="utf-8")
    checks_in_results = {c.check for r in runs for t in r.tasks if t.mutant is None for c in t.checks}
    assert CHROMIUM is not None
    async with Chromium(CHROMIUM) as browser:
        await browser.open(page.as_uri(), WIDTH, HEIGHT)
        layout = await browser.evaluate(LAYOUT)
        shots = [await browser.screenshot(tmp_path / f"report-{case}-{WIDTH}px.png"),
                 await browser.screenshot(tmp_path / f"report-{case}-{WIDTH}px-full.png", full_page=True)]
        failed_run = next(f["id"] for f in layout["failed"] if "interrupt-cancel" in f["id"])
        await jump(browser, "checks")
        shots.append(await browser.screenshot(tmp_path / f"report-{case}-{WIDTH}px-matrix.png"))
        await jump(browser, failed_run)
        shots.append(await browser.screenshot(tmp_path / f"report-{case}-{WIDTH}px-run.png"))
        landing = await jump(browser, f"{failed_run}-tl-request-2")
        stuck = await sticky(browser)
        shots.append(await browser.screenshot(tmp_path / f"report-{case}-{WIDTH}px-matrix-scrolled.png"))
        requested = browser.requests()
    keep(shots)
    with capsys.disabled():
        for shot in shots:
            print(f"\nscreenshot: {shot}")

    assert layout["scrollWidth"] <= layout["clientWidth"] == WIDTH, f"sideways scroll; too wide: {layout['wide']}"
    assert layout["matrices"], "no check matrix"
    # where each agent stands on every check is seen before the evidence: within two windows of the top
    assert layout["matrices"][0]["box"]["top"] < 2 * HEIGHT, f"the check matrix is far down: {layout['matrices'][0]}"
    for matrix in layout["matrices"]:
        assert {c["id"] for c in matrix["checks"]} == checks_in_results
        for check in matrix["checks"]:
            assert 0 <= check["left"] and check["right"] <= WIDTH, f"{check['id']} is off screen: {check}"
            assert check["width"] >= 40 and check["height"] > 0, f"{check['id']} is squeezed: {check}"
    drawn = [f for f in layout["failed"] if f["timeline"]]
    assert drawn, "no failed run shows its timeline"
    for f in drawn:
        assert f["timeline"]["marks"] > 0 and f["timeline"]["width"] > 600 and f["timeline"]["height"] > 60, f
        assert f["timeline"]["right"] <= WIDTH
    assert landing["target"] == f"{failed_run}-tl-request-2"
    assert 0 <= landing["top"] < landing["height"], f"the evidence link did not bring its mark on screen: {landing}"
    assert abs(stuck["header_top"]) <= 1 and stuck["table_top"] < 0, f"the matrix header does not stick: {stuck}"
    assert layout["scripts"] == 0 and layout["images"] == 0
    assert requested == [page.as_uri()], f"the page asked for more than itself: {requested}"
    for shot in shots:
        assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
