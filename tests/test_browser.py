"""report.html in a real headless Chromium, opened from file:// with no network: no console error, nothing
requested but the file itself, the flame graphs drawn, a click zooms, search highlights, tables sort.

Chromium is Debian's `chromium` package. CI installs it (.ci/run), so there a missing browser is a failure;
on a developer's machine without it (CI unset) the test is skipped with the command that installs it,
because a browser is a large system package that a plain `pip install -e .[test]` cannot bring.
Screenshots go to the test's temporary folder, or to $FLAMETOOL_SCREENSHOTS when set (to look at them).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# the test extra brings websocket-client; a GPU machine running `pytest -m gpu` may not have it
pytest.importorskip("websocket", reason="websocket-client (pip install -e .[test]) drives Chromium")

from browser import Chromium, find_chromium  # noqa: E402
from flametool import render
from flametool.analyse import dispatch  # noqa: E402
from flametool.run import rundir  # noqa: E402
from reportruns import cpu_run_dir, h200_run_dir, hostile_run  # noqa: E402

INSTALL = "apt-get update && apt-get install -y chromium"


@pytest.fixture(scope="module")
def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"chromium is not installed; CI must install it ({INSTALL}; .ci/run does)")
        pytest.skip(f"chromium is not installed ({INSTALL}); CI runs this test")
    return path


@pytest.fixture(params=["cpu", "h200", "hostile"])
def report_page(request, tmp_path_factory) -> tuple[str, Path]:
    if request.param == "cpu":
        run = cpu_run_dir(tmp_path_factory)
    elif request.param == "h200":
        run = h200_run_dir(tmp_path_factory)
    else:
        run = hostile_run(tmp_path_factory.mktemp("hostile") / "run")
    out = tmp_path_factory.mktemp("page") / "report.html"
    rundir.write_report(run, render.show("html", dispatch.analyse_dir(run)), out)
    return request.param, out


def shots_dir(tmp_path: Path) -> Path:
    where = Path(os.environ.get("FLAMETOOL_SCREENSHOTS") or tmp_path)
    where.mkdir(parents=True, exist_ok=True)
    return where


NODE_RECT = """(() => {{
  const el = {sel};
  el.scrollIntoView({{block: "center"}});
  const r = el.getBoundingClientRect(), c = el.closest(".fg-canvas").getBoundingClientRect();
  return {{x: r.left, y: r.top, w: r.width, h: r.height, cx: c.left, cw: c.width, display: getComputedStyle(el).display}};
}})()"""


def test_report_in_chromium(chromium_path, report_page, tmp_path):
    name, page = report_page
    with Chromium(chromium_path) as browser:
        browser.open(page.as_uri())
        assert browser.errors() == []
        assert set(browser.requests()) == {page.as_uri()}, "the page loaded something besides itself"

        graphs = browser.eval("Object.keys(window.flametoolGraphs)")
        data = json.loads(browser.eval("document.getElementById('flame-data').textContent"))
        assert sorted(graphs) == sorted(g["id"] for g in data["graphs"]) and graphs
        for gid in graphs:  # a pair's differential graph shows once its pair is chosen (one pair at a time)
            browser.eval(f"""(() => {{
              const p = document.getElementById('{gid}').getAttribute('data-pair');
              const b = p === null ? null : document.querySelector('[data-show-pair="' + p + '"]');
              if (b) b.click();  // a page of one pair has no buttons: its graph shows
            }})()""")
            drawn = browser.eval(f"[...document.querySelectorAll('#{gid} .fg-node')].filter(e => e.style.display !== 'none' && e.offsetWidth > 0).length")
            assert drawn > 1, gid
        browser.eval("""(() => { const b = document.querySelector('[data-show-pair="0"]'); if (b) b.click(); })()""")

        # click a frame below the root that is narrower than the graph: it becomes the full width
        gid = graphs[0]
        index = browser.eval(f"""(() => {{
          const g = window.flametoolGraphs['{gid}'], px = g.canvas.clientWidth;
          const n = g.nodes.filter(n => n.parent >= 0 && n.w * px > 30 && n.w < 0.9).sort((a, b) => b.w - a.w)[0];
          return n ? n.i : null; }})()""")
        if index is None:  # every frame spans the graph (one stack): zoom into the first one below the root
            index = 1
        sel = f"document.querySelector('#{gid} .fg-node[data-i=\"{index}\"]')"
        before = browser.eval(NODE_RECT.format(sel=sel))
        browser.click(before["x"] + min(before["w"] / 2, 20), before["y"] + before["h"] / 2)
        after = browser.eval(NODE_RECT.format(sel=sel))
        assert abs(after["w"] - after["cw"]) <= 2 and abs(after["x"] - after["cx"]) <= 2, (before, after)
        assert browser.eval(f"window.flametoolGraphs['{gid}'].zoomed.i") == index

        # the tooltip names the frame in full
        browser.send("Input.dispatchMouseEvent", type="mouseMoved", x=after["x"] + 10, y=after["y"] + after["h"] / 2)
        tip = browser.eval("(() => { const t = document.querySelector('.fg-tip'); return [t.style.display, t.textContent]; })()")
        full = browser.eval(f"window.flametoolGraphs['{gid}'].nodes[{index}].name")
        assert tip[0] == "block" and tip[1].startswith(full) and "us/call" in tip[1]

        # reset brings the frame back to its own width
        browser.eval(f"document.querySelector('#{gid} .fg-reset').click()")
        reset = browser.eval(NODE_RECT.format(sel=sel))
        assert abs(reset["w"] - before["w"]) <= 2

        # search highlights the frames that match, and totals them
        browser.eval(f"""(() => {{ const i = document.querySelector('#{gid} .fg-search');
          i.value = {json.dumps(full[:40])}.replace(/[.*+?^${{}}()|[\\]\\\\]/g, '\\\\$&'); i.dispatchEvent(new Event('input')); }})()""")
        assert browser.eval(f"document.querySelectorAll('#{gid} .fg-match').length") >= 1
        assert "match" in browser.eval(f"document.querySelector('#{gid} .fg-status').textContent")

        # a numeric column sorts, largest first
        first = browser.eval("""(() => { const t = document.querySelector('table.frames');
          t.tHead.rows[0].cells[2].click();
          return [...t.tBodies[0].rows].map(r => parseFloat(r.cells[2].dataset.sort)); })()""")
        assert first == sorted(first, reverse=True)

        browser.eval(f"document.querySelector('#{gid} .fg-search').value = ''; document.querySelector('#{gid} .fg-search').dispatchEvent(new Event('input'))")
        assert browser.errors() == []
        assert not [e for e in browser.events if e.get("method") == "Page.javascriptDialogOpening"], "a name ran as script"
        shot = shots_dir(tmp_path) / f"report-{name}.png"
        browser.eval("window.scrollTo(0, 0)")
        browser.screenshot(shot)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_sweep_report_in_chromium_on_a_laptop_screen(chromium_path, tmp_path):
    """The H200 sweep's page at 1366x768: nothing loaded but itself, no console error, no sideways scrolling,
    the plot wide enough to read, every line drawn, and no two axis labels or crossover labels on top of each
    other."""
    sample = Path(__file__).resolve().parent.parent / "samples" / "h200-sweep-fp16"
    if not sample.is_dir():
        pytest.skip("samples/h200-sweep-fp16 is not recorded")
    page = tmp_path / "sweep.html"
    rundir.write_report(sample, render.show("html", dispatch.analyse_dir(sample)), page)
    with Chromium(chromium_path, width=1366, height=768) as browser:
        browser.open(page.as_uri())
        assert browser.errors() == []
        assert set(browser.requests()) == {page.as_uri()}
        assert browser.eval("document.documentElement.scrollWidth <= window.innerWidth")
        plot = browser.eval("(() => { const r = document.querySelector('#plot svg.logplot').getBoundingClientRect(); "
                            "return [r.width, r.height]; })()")
        assert plot[0] >= 800 and plot[1] >= 350, plot
        assert browser.eval("document.querySelectorAll('#plot polyline').length") == 4  # host and GPU, two cases
        assert browser.eval("document.querySelectorAll('#ratio polyline').length") == 1
        # labels drawn as text must not overlap one another: the x axis's, and the crossovers'
        for selector in ("#plot text.tick", "#ratio text.tick", "#plot text.xover"):
            boxes = browser.eval(f"[...document.querySelectorAll('{selector}')].map(t => {{ "
                                 "const r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })")
            assert boxes, selector
            for i, a in enumerate(boxes):
                for b in boxes[i + 1:]:
                    apart = a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
                    assert apart, (selector, a, b)
        browser.screenshot(shots_dir(tmp_path) / "sweep-laptop.png")


FRAME_COLUMNS = """(() => {
  const probe = document.createElement('span');
  probe.className = 'frame'; probe.style.fontSize = '12px'; probe.textContent = '0'.repeat(20);
  document.body.appendChild(probe);
  const ch = probe.getBoundingClientRect().width / 20;
  probe.remove();
  return [...document.querySelectorAll('table.frames')].filter(t => t.offsetWidth > 0).map(t => {
    const cell = t.querySelector('tbody td.frame'), box = t.closest('.scroll').getBoundingClientRect();
    const heads = [...t.querySelectorAll('thead th')].map(h => h.getBoundingClientRect());
    return {id: t.id, chars: cell.getBoundingClientRect().width / ch,
            clipped: heads.filter(h => h.right > box.right + 1 || h.left < box.left - 1).length};
  });
})()"""


def test_frame_tables_leave_the_frame_column_readable(chromium_path, tmp_path):
    """Issue 33, item 1: on the H200 host-bound run's page the per-case tables stood side by side with the frame
    column about 5 characters wide (names wrapped letter by letter) and the last heading cut to "sam". At 1400
    and at 800 px every shown frame table gives the frame column at least 20 characters and no heading is
    cut off by the table's box."""
    sample = Path(__file__).resolve().parent.parent / "samples" / "h200-hostbound-1024"
    if not sample.is_dir():
        pytest.skip("samples/h200-hostbound-1024 is not recorded")
    page = tmp_path / "report.html"
    rundir.write_report(sample, render.show("html", dispatch.analyse_dir(sample)), page)
    with Chromium(chromium_path, width=1400, height=1000) as browser:
        browser.open(page.as_uri())
        for width in (1400, 800):
            browser.send("Emulation.setDeviceMetricsOverride", width=width, height=1000, deviceScaleFactor=1, mobile=False)
            tables = browser.eval(FRAME_COLUMNS)
            assert len(tables) >= 3, tables  # the shown pair's diff and the per-case tables
            for t in tables:
                assert t["chars"] >= 20 and t["clipped"] == 0, (width, t)
        browser.screenshot(shots_dir(tmp_path) / "frames-800.png")


NAV_LANDINGS = """(async () => {
  const out = [];
  for (const a of document.querySelectorAll('header nav a')) {
    a.click();
    await new Promise(r => setTimeout(r, 100));
    const h = document.querySelector('header.top').getBoundingClientRect().bottom;
    const s = document.getElementById(a.getAttribute('href').slice(1));
    const top = (s.querySelector('h2') || s).getBoundingClientRect().top;
    const atEnd = window.scrollY >= document.documentElement.scrollHeight - window.innerHeight - 1;
    out.push({id: s.id, header: h, heading: top, ok: top >= h - 1 || atEnd});
  }
  window.scrollTo(0, 0);
  return out;
})()"""


def test_a_narrow_window_scrolls_no_page_sideways_and_links_land_below_the_header(chromium_path, tmp_path_factory):
    """At 800 px the host-bound run's page (five cases, three pairs) and a CPU run's (its counted tables) scrolled
    sideways as a whole: the cases table, the layers table and the counted tables were wider than the window
    and nothing held them (the sticky header's background stopped at the window's edge). A wide table now
    scrolls inside its own box. And a link of the header's row left its section's heading under the sticky
    header (scroll-margin 100 px, the header 110 px; more where the title or the links wrap, as the sweep's page
    did at 800 px, 129 px, with no script to say so): each heading now lands below it, on the sweep's and the
    atlas's pages too. Each page at 800 and at 600 px, in one browser."""
    samples = Path(__file__).resolve().parent.parent / "samples"
    runs = [cpu_run_dir(tmp_path_factory)] + [samples / s for s in ("h200-hostbound-1024", "h200-sweep-same-operands",
                                                                     "h200-atlas") if (samples / s).is_dir()]
    with Chromium(chromium_path, width=800, height=700) as browser:
        for run in runs:
            page = tmp_path_factory.mktemp("narrow") / "report.html"
            rundir.write_report(run, render.show("html", dispatch.analyse_dir(run)), page)
            for width in (800, 600):
                browser.send("Emulation.setDeviceMetricsOverride", width=width, height=700, deviceScaleFactor=1,
                             mobile=False)
                browser.open(page.as_uri())
                assert browser.eval("document.documentElement.scrollWidth") <= width, (run, width)
                landings = browser.eval(NAV_LANDINGS)
                assert len(landings) >= 5 and all(x["ok"] for x in landings), (run, width, landings)
                assert browser.errors() == []


def test_without_javascript_no_dead_control_is_shown_and_every_figure_is(chromium_path, tmp_path):
    """With script off, the page showed the flame graphs' search boxes and "reset zoom" buttons over empty
    canvases, each captioned "...; 34 drawn", and the pair and layer-view buttons, none of which did anything;
    the layers "as a layer of their own" could not be shown at all. Now those controls and the graphs are not
    shown (the noscript line says why), every pair's differences are, and both views of the layers, each under
    its heading."""
    sample = Path(__file__).resolve().parent.parent / "samples" / "h200-hostbound-1024"
    if not sample.is_dir():
        pytest.skip("samples/h200-hostbound-1024 is not recorded")
    page = tmp_path / "report.html"
    rundir.write_report(sample, render.show("html", dispatch.analyse_dir(sample)), page)
    with Chromium(chromium_path) as browser:
        browser.send("Emulation.setScriptExecutionDisabled", value=True)
        browser.open(page.as_uri())
        shown = "(sel => [...document.querySelectorAll(sel)].map(e => e.offsetHeight > 0))"
        assert browser.eval("window.flametoolGraphs === undefined")  # the script did not run
        for dead in (".fg-tools", ".fg-canvas", ".pair-switch", ".view-switch", "button", "input"):
            assert not any(browser.eval(f"{shown}('{dead}')")), dead
        assert browser.eval(f"{shown}('[data-view]')") == [True, True]
        assert all(browser.eval(f"{shown}('[data-view] .noscript-only')"))
        pairs = browser.eval("[...document.querySelectorAll('[data-view=\"caller\"] figure[data-pair], "
                             "#frames [data-pair]')].map(e => [e.dataset.pair, e.offsetHeight > 0])")
        assert len(pairs) == 6 and all(v for _, v in pairs), pairs  # three pairs: a layer chart and a table each
        assert "need JavaScript" in browser.eval("document.getElementById('flames').innerText")
