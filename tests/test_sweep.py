"""flametool sweep: the crossover and share logic on hand-made points, and a real sweep on the CPU (child
processes, paired loops, run.json read back with json, the report read back in a browser elsewhere)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from flametool import render
from flametool.analyse import dispatch, summary, sweep
from flametool.run import casenames, rundir, stats
from flametool.run.record import SweepPoint
from flametool.run.timing import Loops
from flametool.render import charts
from shared import flametool_once

CASES = Path(__file__).parent / "cases" / "user_cases.py"


def timing(n: int, cpu: list[float], gpu: list[float] | None = None, wall: list[float] | None = None) -> SweepPoint:
    """One loop per process, one process per figure."""
    gpu = gpu or [None] * len(cpu)
    wall = wall or cpu
    return SweepPoint([n, n, n], 100, [Loops([c], [g] if g is not None else [], [0], [w]) for c, g, w in zip(cpu, gpu, wall)])


def points(pairs: list[tuple[int, float, float]]) -> list[sweep.SizePoint]:
    """(size, host us, GPU us) -> points as sweep.point makes them from timed loops."""
    return [sweep.point(timing(n, [c, c], [g, g])) for n, c, g in pairs]


# --- crossings and crossovers ------------------------------------------------------------------------------

def seen(size: int, host: float, own_gpu: float) -> tuple[int, float, float]:
    """What CUDA events show of a GPU whose own work takes `own_gpu` us a call behind launches of `host` us:
    at a host-bound size it waits for each launch, so its time per call is the host's."""
    return size, host, max(own_gpu, host * 1.001)


def test_crossover_where_the_gpu_line_meets_the_host_line():
    # host 10 us a call everywhere; the GPU's own time 10 * (n / 512)^3: it meets the host's at exactly 512,
    # though events show the GPU at 10 us at every host-bound size
    pts = points([seen(n, 10.0, 10 * (n / 512) ** 3) for n in (64, 128, 256, 1024, 2048)])
    assert [p.host_bound for p in pts] == [True, True, True, False, False]
    c = sweep.crossover(pts, "matmul")
    assert c.size == pytest.approx(512)
    assert c.us == pytest.approx(10.0) and c.flips == 1
    assert "between 256, host-bound, and 1024, GPU-bound" in c.text


def test_a_case_measured_at_no_size_has_no_crossover_sentence_of_a_cpu_run():
    """A case that failed at every size was told 'no GPU time measured (a CPU run): the host does all the work at
    every size', of a GPU sweep too: it was measured nowhere."""
    failed = [sweep.SizePoint([n, n, n], n, error="refuses") for n in (64, 128)]
    assert sweep.crossover(failed, "matmul").text == "not measured at any size"
    cpu = points([(64, 5.0, 0.0), (128, 9.0, 0.0)])
    assert sweep.crossover(cpu, "matmul").text.startswith("no GPU time measured (a CPU run)")


def test_crossover_of_the_h200_sample_cupy():
    # samples/h200-sweep-fp16, cupy float16 (host us, GPU us per call as printed there): the GPU-bound line
    # through 4096 and 8192 has slope ln(1620/207)/ln 2; its value at 2048 meets the host's line 2048-4096
    pts = points([(1024, 26.09, 26.11), (2048, 28.18, 28.27), (4096, 20.77, 207.0), (8192, 31.82, 1620.0)])
    slope = math.log(1620 / 207) / math.log(2)
    low = math.log(207 / 2 ** slope) - math.log(28.18)  # GPU below host at 2048, on the log scale
    high = math.log(207 / 20.77)
    t = -low / (high - low)
    assert sweep.crossover(pts, "matmul").size == pytest.approx(2048 * 2 ** t)
    assert 2048 < sweep.crossover(pts, "matmul").size < 2200


def test_crossover_with_one_gpu_bound_size_uses_the_host_bound_factor():
    # 256: GPU/host 1.0; 1024: 4.0. Where it reaches 1.2 (the host-bound factor), on a log scale: 4^(ln 1.2 / ln 4)
    pts = points([(256, 10.0, 10.0), (1024, 10.0, 40.0)])
    assert sweep.crossover(pts, "matmul").size == pytest.approx(256 * 1.2)


def test_crossings_weigh_by_distance_from_zero():
    # log ratios -3 and +1: three quarters of the way from 100 to 10000 on a log scale
    found = sweep.crossings([[100] * 3, [10000] * 3], [-3.0, 1.0])
    assert len(found) == 1 and found[0].rising
    assert found[0].size == pytest.approx(10 ** (2 + 2 * 0.75))
    assert found[0].low == [100] * 3 and found[0].high == [10000] * 3


def test_zero_counts_as_below_and_falling_crossings_are_kept():
    found = sweep.crossings([[n] * 3 for n in (8, 16, 32, 64)], [0.0, 0.0, 1.0, -1.0])
    assert [(c.low[0], c.high[0], c.rising) for c in found] == [(16, 32, True), (32, 64, False)]


def test_gpu_bound_everywhere_and_host_bound_everywhere():
    gpu = sweep.crossover(points([(1024, 10, 100), (4096, 10, 5000)]), "matmul")
    assert gpu.size is None and "GPU-bound at every size" in gpu.text and "below 1024" in gpu.text
    host = sweep.crossover(points([seen(64, 10, 2), seen(256, 10, 5)]), "matmul")
    assert host.size is None and "host-bound at every size" in host.text and "above 256" in host.text


def test_noise_near_the_crossover_takes_the_last_rise():
    # host, GPU, host, GPU, GPU: the last change to GPU-bound is where the GPU stays behind
    pts = points([seen(64, 10, 5), (128, 10, 13), seen(256, 10, 9), (512, 10, 20), (1024, 10, 160)])
    c = sweep.crossover(pts, "matmul")
    assert c.flips == 3 and 256 <= c.size < 512
    assert "3 times" in c.text


def test_host_bound_again_at_the_largest_size_has_no_crossover():
    c = sweep.crossover(points([seen(64, 10, 5), (128, 10, 20), seen(256, 100, 20)]), "matmul")
    assert c.size is None and "host-bound again" in c.text


def test_no_gpu_time_no_crossover():
    c = sweep.crossover([sweep.point(timing(64, [3.0, 3.0]))], "matmul")
    assert c.size is None and "CPU run" in c.text


def test_triples_share_the_axis_by_the_cube_root():
    assert sweep.edge([4096, 1024, 4096]) == pytest.approx((4096 * 1024 * 4096) ** (1 / 3))
    assert sweep.size_name([4096, 1024, 4096], "matmul") == "4096x1024x4096"
    assert sweep.size_name([64, 64, 64], "matmul") == "64"


# --- a pair at one size -----------------------------------------------------------------------------------

def test_share_at_a_host_bound_size_is_the_extra_host_time():
    # head: 15 us host, 16 us wall; base 10 and 11: the head's 5 extra host us are 5/16 of its wall time
    base = timing(1024, [10.0, 10.0], [9.0, 9.0], [11.0, 11.0])
    head = timing(1024, [15.0, 15.0], [9.0, 9.0], [16.0, 16.0])
    p = sweep.pair_point("base", base, "head", head, True)
    assert p.slower == "head"
    assert p.extra_host_us == pytest.approx(5.0)
    assert p.share == pytest.approx(5 / 16)
    assert p.wall.ratio == pytest.approx(16 / 11)


def test_share_at_a_gpu_bound_size_is_what_the_wall_time_shows():
    # the GPU takes 1000 us a call; the head's 5 extra host us hide behind it: its wall time is 0.2 us longer
    base = timing(8192, [10.0, 10.0], [1000.0, 1000.0], [1000.0, 1000.0])
    head = timing(8192, [15.0, 15.0], [1000.0, 1000.0], [1000.2, 1000.2])
    p = sweep.pair_point("base", base, "head", head, True)
    assert p.slower == "head" and p.extra_host_us == pytest.approx(5.0)
    assert p.share == pytest.approx(0.2 / 1000.2)


def test_share_when_the_faster_case_has_more_host_time():
    # the base is slower on the wall (its GPU work is slower) although the head spends more host time
    base = timing(512, [10.0, 10.0], [50.0, 50.0], [50.0, 50.0])
    head = timing(512, [12.0, 12.0], [30.0, 30.0], [30.0, 30.0])
    p = sweep.pair_point("base", base, "head", head, True)
    assert p.slower == "base" and p.extra_host_us == pytest.approx(-2.0) and p.share == 0.0


def test_the_slower_case_is_the_one_the_paired_wall_ratio_says():
    # processes of different speeds: the paired ratio (1.2, 0.9, 0.95: geometric mean 1.009) says the head is
    # slower, and the row's difference is +0.8 us; the medians of all loops (base 100, head 90) say the base. The
    # row named the base slower beside a ratio above 1 (a CPU sweep at 128: 0.985x, -0.95 us, "slower: torch")
    base = timing(512, [10.0, 100.0, 100.0])
    head = timing(512, [12.0, 90.0, 95.0])
    p = sweep.pair_point("base", base, "head", head, True)
    assert p.wall.ratio > 1 and p.wall.diff_us > 0
    assert p.slower == "head"
    # its host time beyond the base's is the difference of the two figures the tables show, pooled at the median
    # process's speed (as compare pools a case's): they stand in the paired ratio, so the host difference says
    # what the ratio says (from the medians of every loop it had read -10 us beside a ratio above 1)
    assert p.extra_host_us == pytest.approx(p.host.diff_us) and p.extra_host_us > 0
    assert 0 < p.share < 1


def test_share_never_exceeds_the_wall_time():
    # noisy figures: the extra host time (8 us) is more than the wall-time gap (3 us); the gap is what shows
    base = timing(64, [2.0, 2.0], [1.0, 1.0], [5.0, 5.0])
    head = timing(64, [10.0, 10.0], [1.0, 1.0], [8.0, 8.0])
    p = sweep.pair_point("base", base, "head", head, True)
    assert p.share == pytest.approx(3 / 8)


def test_paired_wall_ratio_pools_processes():
    # each process's own speed cancels: ratios 2.0 and 2.0 although the two processes differ fourfold
    base = timing(64, [1.0, 4.0], wall=[1.0, 4.0])
    head = timing(64, [2.0, 8.0], wall=[2.0, 8.0])
    p = sweep.pair_point("base", base, "head", head, True)
    assert p.wall.ratio == pytest.approx(2.0) and p.wall.units == 2
    unpaired = sweep.pair_point("base", base, "head", head, False)
    assert not unpaired.wall.paired


# --- the plots ------------------------------------------------------------------------------------------------

def test_time_plot_puts_larger_times_higher_and_marks_crossovers():
    c = charts.time_plot({"a": [(64, "64", 10.0, 1.0), (4096, "4096", 12.0, 900.0)]}, {"a": (512.0, 11.0)})
    host, gpu = c.series
    assert host.label == "a host" and gpu.label == "a GPU" and gpu.dash
    # SVG y grows downwards: 900 us is above 1 us
    assert gpu.marks[1].y < gpu.marks[0].y
    assert c.x0 < c.lines[0].x < c.x1 and "512" in c.lines[0].text
    assert c.lines[0].y is not None and gpu.marks[1].y < c.lines[0].y < gpu.marks[0].y
    # decades that hold every figure, labelled
    assert [t for _, t in c.y_ticks][0] == "1 us" and [t for _, t in c.y_ticks][-1] == "1 ms"


def test_ratio_plot_ticks_do_not_overlap():
    c = charts.ratio_plot([("h / b", "#000", [(64, "64", 1.02, 0.99, 1.05), (1024, "1024", 0.98, 0.97, 0.99)])])
    ys = sorted(y for y, _ in c.y_ticks)
    assert all(b - a >= 16 for a, b in zip(ys, ys[1:]))
    assert "1×" in [t for _, t in c.y_ticks] and c.reference is not None and len(c.bands) == 1


# --- a real sweep on the CPU ------------------------------------------------------------------------------

SIZES = "8,32,128,512"


@pytest.fixture(scope="module")
def swept(cli, tmp_path_factory):
    # made once in the session, by whichever worker asks first (tests/shared.py), and only read
    return flametool_once(tmp_path_factory, "sweep-cpu", "sweep", "--device", "cpu", "--sizes", SIZES, "--processes", "2",
                          "--repeats", "2", "--iters", "100", "--warmup", "5", "--case", f"{CASES}:fails_from_128")


def test_sweep_on_the_cpu_writes_run_json(swept):
    out, proc = swept
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "run.json").read_text())  # what any JSON reader sees
    assert data["kind"] == "sweep" and data["complete"] is True
    assert data["config"]["sizes"] == [[n, n, n] for n in (8, 32, 128, 512)]
    assert list(data["results"]) == ["numpy", "torch", "fails_from_128"]
    assert data["groups"] == [{"cases": ["numpy", "torch", "fails_from_128"], "paired": True,
                               "reason": "paired: every case of the run in the same processes, loops interleaved",
                               "processes": 2}]
    for label in ("numpy", "torch"):
        pts = data["results"][label]["points"]
        assert [p["shape"] for p in pts] == data["config"]["sizes"]
        for p in pts:
            assert p["error"] is None and len(p["processes"]) == 2
            for loops in p["processes"]:
                assert len(loops["cpu_us"]) == len(loops["wall_us"]) == 2 and loops["gpu_us"] == []
                # the wall time runs to the sync after the loop: never less than the launches' own time
                assert all(w >= c for c, w in zip(loops["cpu_us"], loops["wall_us"]))
            assert 0 < p["calls"] <= 100
    # the case that fails at 128 and above ran at 8 and 32, and says why it did not at the others
    small = data["results"]["fails_from_128"]["points"]
    assert [len(p["processes"]) for p in small] == [2, 2, 0, 0]
    assert [p["error"] for p in small[:2]] == [None, None]
    assert "refuses 128x128x128" in small[2]["error"] and "refuses 512x512x512" in small[3]["error"]


def test_a_size_s_figures_are_what_export_and_diff_read_of_case_at_size(swept):
    """One figure in every view: a case's host and wall time at a size in the sweep's tables is the one export and
    diff read of CASE@SIZE (casenames.as_cases, pooled in its group as compare pools a case), not the median of
    every loop (a CPU sweep's table read numpy 10.12 us at a size where export read 15.91)."""
    out, _ = swept
    run = rundir.load(out)
    analysed = sweep.analyse(out, run)
    view = casenames.as_cases(run)
    host, wall = stats.group_pooled(view, False), stats.group_pooled(view, False, metric="wall_us")
    checked = 0
    for label, curve in analysed.curves.items():
        for p in curve:
            name = casenames.sized(label, p.shape, run.config.operation)
            if p.cpu_us is None:
                assert name not in host
                continue
            assert p.cpu_us == pytest.approx(host[name].us, rel=1e-12), name
            assert p.wall_us == pytest.approx(wall[name].us, rel=1e-12), name
            assert p.cpu_interval == host[name].interval
            checked += 1
    assert checked == 10  # numpy and torch at 4 sizes, the failing case at 2
    # and a pair's row says the difference of those two figures
    for pair in analysed.pairs:
        for pp in pair.points:
            if pp.extra_host_us is not None:
                b, h = (casenames.sized(x, pp.shape, run.config.operation) for x in (pair.base, pair.head))
                slower, faster = (h, b) if pp.slower == pair.head else (b, h)
                assert pp.extra_host_us == pytest.approx(host[slower].us - host[faster].us)


def test_loops_at_each_size_interleave_the_cases(swept):
    out, _ = swept
    run = rundir.load(out)
    for j in range(4):
        for i in range(2):
            live = [r.points[j].processes[i] for r in run.results.values() if r.points[j].processes]
            assert len(live) == (3 if j < 2 else 2)
            slots = sorted(s for loops in live for s in loops.slots)
            assert slots == list(range(2 * len(live)))  # one sequence of loops, every case's loops in it


def test_a_case_that_failed_at_every_size_is_said_so_and_its_pair_has_no_table(swept, tmp_path):
    """A case that failed at every size was told 'no GPU time measured (a CPU run): the host does all the work at
    every size', and its pair got a table of '-' before 'nothing to compare'."""
    import shutil

    from flametool import render

    out, _ = swept
    failed = tmp_path / "failed"
    shutil.copytree(out, failed)
    data = json.loads((failed / "run.json").read_text())
    for point in data["results"]["fails_from_128"]["points"]:
        point["processes"], point["error"] = [], point.get("error") or "refuses it here too"
    (failed / "run.json").write_text(json.dumps(data))
    shown = render.show("terminal", dispatch.analyse_dir(failed))
    assert "fails_from_128: not measured at any size" in shown
    assert "fails_from_128 against numpy: nothing to compare" in shown
    assert "fails_from_128 against numpy: wall time per call" not in shown
    assert "torch against numpy: wall time per call" in shown  # a pair with figures keeps its table


def test_sweep_terminal_table_and_report(swept):
    out, proc = swept
    assert "numpy host" in proc.stdout and "torch wall" in proc.stdout
    # the figures are pooled at the median process's speed (it said "median of every loop" of them)
    title = " ".join(proc.stdout.split("┏", 1)[0].split())  # rich wraps it
    assert "pooled over the processes at the median process's speed" in title and "every loop" not in title
    assert "torch against numpy: wall time per call, paired" in proc.stdout
    for size in ("8 ", "32 ", "128 ", "512 "):
        assert f"│ {size}" in proc.stdout
    assert "fails_from_128 at 128: " in proc.stdout and "refuses 128x128x128" in proc.stdout
    assert "no GPU time measured (a CPU run)" in proc.stdout
    assert f"report: {out / 'report.html'}" in proc.stdout
    html = (out / "report.html").read_text()
    # a host line per case (no GPU lines on the CPU), a ratio line per compared pair: numpy:torch, and the case
    # of one's own against the first built-in, numpy:fails_from_128 (issue 33, item 8)
    assert html.count("<polyline") == 3 + 2
    assert "torch / numpy" in html and "Time per call against size, on the CPU" in html
    # worded for the CPU: no GPU legend, caption or columns, no launch-cost heading, no bound column, no dead
    # "Layers" link without --sample
    for gpu_words in ("CUDA events", "Dashed", "launch cost", "host-bound", " GPU</th>", 'href="#layers"'):
        assert gpu_words not in html, gpu_words
    assert " GPU " not in proc.stdout.split("torch against numpy")[0] and "│ host" not in proc.stdout


def test_report_renders_a_sweep_again(swept, cli, tmp_path):
    out, _ = swept
    proc = cli("report", str(out), "-o", str(tmp_path / "again.html"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "again.html").read_text().count("<polyline") == 5


@pytest.mark.parametrize("command", [["export", "--format", "speedscope"], ["diff", "--base", "numpy", "--head", "torch"],
                                     ["snakeviz"]])
def test_profile_commands_on_a_sweep_say_it_has_no_profiles(swept, cli, command):
    out, _ = swept
    proc = cli(command[0], str(out), *command[1:], timeout=60)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "a sweep" in proc.stderr


@pytest.mark.parametrize("sizes, message", [
    ("8,x", "'x' is not a size"), ("8,0", "'0' is not a size"), ("8,8", "'8' is given twice"),
    ("8x8", "'8x8' is not a size"), ("", "'' is not a size"), ("64,...,512", "'...' needs two sizes"),
    ("64,128,...", "'...' needs two sizes"), ("128,64,...,512", "'...' needs growing sizes"),
    ("64,128,...,4096x1024x4096", "'...' needs growing sizes on one line"),
    ("8;8,8", "'8,8' is not a size"), (",".join(map(str, range(1, 70))), "at most 64 sizes"),
    # a ladder through a size given before it timed that size twice; a figure run.json would not read back was
    # measured, then its run could not be read
    ("32,8,16,...,64", "'...' runs through 32, which is given before it"),
    ("8,99999999999999999999", "has a figure above 1e+12"),
])
def test_bad_sizes_are_one_line(cli, tmp_path, sizes, message):
    proc = cli("sweep", "--device", "cpu", "--sizes", sizes, "--out", str(tmp_path / "r"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "r").exists()


def test_default_sizes_per_device():
    from flametool.commands import options
    from flametool.measure import config

    assert options.default_sizes("cpu") == [[n] * 3 for n in (8, 16, 32, 64, 128, 256, 512)]
    cuda = options.default_sizes("cuda:0")
    assert cuda[0] == [64] * 3 and cuda[-2] == [16384] * 3 and cuda[-1] == config.SEED_SHAPE
    assert options.parse_sizes("64, 4096x1024x4096") == [[64] * 3, [4096, 1024, 4096]]
    assert options.parse_sizes("64,128,...,1024") == [[n] * 3 for n in (64, 128, 256, 512, 1024)]
    assert options.parse_sizes("100,300,...,2000") == [[n] * 3 for n in (100, 300, 900, 2000)]
    # a product's figures that change grow (one step), the others stay: the rule a workload's shapes follow
    fixed_k = [[n, 1024, n] for n in (64, 128, 256, 512)]
    assert options.parse_sizes("64x1024x64,128x1024x128,...,512x1024x512") == fixed_k
    assert options.parse_sizes("64;4096,1024,4096;8192x8x8") == [[64] * 3, [4096, 1024, 4096], [8192, 8, 8]]


def test_sample_adds_the_layers_at_each_host_bound_size(cli, tmp_path):
    """--sample: each case alone under cProfile and py-spy at each size (all host-bound on the CPU), its
    stacks read into host time per call by layer there."""
    import pstats


    out = tmp_path / "sampled"
    proc = cli("sweep", "--device", "cpu", "--libs", "numpy", "--sizes", "8,64", "--processes", "1", "--repeats", "2",
               "--iters", "200", "--sample", "--sample-seconds", "0.5", "--rate", "200", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "run.json").read_text())
    for point, name in zip(data["results"]["numpy"]["points"], ("numpy@8", "numpy@64")):
        assert point["profile"]["files"] == {"prof": f"{name}.prof", "folded": f"{name}.folded"}
        assert point["profile"]["sampling"]["kept_samples"] > 0
        assert pstats.Stats(str(out / f"{name}.prof")).total_calls > 0  # read back with the tool others use
    a = dispatch.analyse_dir(out)
    assert list(a.layers) == ["8", "64"]
    for size, by_case in a.layers.items():
        x = by_case["numpy"]
        # the layers add up to the paired time per call at that size
        assert x.us_per_call == pytest.approx(a.curves["numpy"][["8", "64"].index(size)].cpu_us)
        assert abs(x.closure.ratio - 1) < 0.05 and "NumPy" in x.layers
    assert "host time per call by layer at each sampled (host-bound) size" in proc.stdout
    html = (out / "report.html").read_text()
    assert 'id="layers"' in html and "numpy 64" in html and "numpy 8" in html
    # its profiles are the cases NAME@SIZE of export, snakeviz and diff (they said it held timings only)
    got = cli("export", str(out), "--format", "folded", "--case", "numpy@64")
    assert got.returncode == 0 and got.stdout.startswith("flametool.workload.libraries.numpy_matmul"), got.stderr
    from flametool.commands import drilldown

    assert drilldown.target(out, "numpy@64") == drilldown.Target("numpy@64", out / "numpy@64.prof")
    got = cli("diff", str(out), "--base", "numpy@8", "--head", "numpy@64")
    assert got.returncode == 0 and "numpy@64 / numpy@8 = " in got.stdout, got.stderr
    got = cli("snakeviz", str(out), "--case", "numpy")
    assert got.returncode == 2 and got.stderr.count("\n") == 1 and "numpy@8, numpy@64" in got.stderr, got.stderr
    # a size profiled where py-spy kept no samples (a loaded machine: its start-up took the window) is said, as
    # compare says "no stack analysis" of a case; its row was left out of the layers without a word
    import shutil

    bare = tmp_path / "bare"
    shutil.copytree(out, bare)
    data["results"]["numpy"]["points"][0]["profile"]["sampling"]["kept_samples"] = 0
    (bare / "run.json").write_text(json.dumps(data))
    (bare / "numpy@8.folded").write_text("")
    a = dispatch.analyse_dir(bare)
    assert list(a.layers) == ["64"] and a.unanalysed == [("8", "numpy", "py-spy kept no samples inside step()")]
    said = "numpy at 8: no stack analysis: py-spy kept no samples inside step()"
    assert said in render.show("terminal", a)
    assert said in render.show("html", a)

    # sweep --sample recorded each sampled size's counted loop in run.json and showed none of it: now the terminal
    # and the page have a row per case and size, and each pair's differences at each size both sides were counted
    # at (a twin of numpy, one Python call more at 64, stands for a second library)
    title = "what one step() call does, counted at each sampled (host-bound) size"
    assert title in proc.stdout and "numpy at 64" in proc.stdout
    assert 'id="counts"' in html and 'href="#counts"' in html and "<td>numpy at 8</td>" in html
    a = dispatch.analyse_dir(out)
    assert {size: list(by_case) for size, by_case in a.counts.items()} == {"8": ["numpy"], "64": ["numpy"]}
    assert a.count_diffs == []  # one case: no pair
    twinned = tmp_path / "twinned"
    shutil.copytree(out, twinned)
    data = json.loads((out / "run.json").read_text())
    twin = json.loads(json.dumps(data["results"]["numpy"]))
    calls = next(t for t in twin["points"][1]["profile"]["counts"]["tallies"] if t["kind"] == "python")
    calls["count"] = str(int(calls["count"]) + 1)
    data["results"]["twin"] = twin
    data["config"]["pairs"] = [["numpy", "twin"]]
    (twinned / "run.json").write_text(json.dumps(data))
    a = dispatch.analyse_dir(twinned)
    assert [(size, d.base, d.head, len(d.changed)) for size, d in a.count_diffs] == [("8", "numpy", "twin", 0),
                                                                                   ("64", "numpy", "twin", 1)]
    shown = render.show("terminal", a)
    assert "twin against numpy at 64:" in shown and "twin at 64" in shown
    assert "twin vs numpy at 64" in render.show("html", a)
    # counts a run.json marks corrupted are left out, as compare leaves them out
    data["results"]["twin"]["points"][1]["profile"]["counts"]["corrupted"] = "a planted fault"
    (twinned / "run.json").write_text(json.dumps(data))
    a = dispatch.analyse_dir(twinned)
    assert list(a.counts["64"]) == ["numpy"] and [size for size, _ in a.count_diffs] == ["8"]


def test_a_wide_interval_says_what_to_do():
    # two processes that disagree by a factor of two at one size: its interval is wide, the other size's not
    narrow_b, narrow_h = timing(64, [10.0, 10.2], wall=[10.0, 10.2]), timing(64, [15.0, 15.3], wall=[15.0, 15.3])
    wide_b, wide_h = timing(128, [10.0, 10.0], wall=[10.0, 10.0]), timing(128, [15.0, 30.0], wall=[15.0, 30.0])
    pair = sweep.SweepPair("b", "h", True, [sweep.pair_point("b", narrow_b, "h", narrow_h, True),
                                            sweep.pair_point("b", wide_b, "h", wide_h, True)])
    from flametool.render import format as fmt

    lines = fmt.sweep_pair_lines(pair, 2, "matmul")
    assert lines[-1].startswith("at 128, wall time: h / b: the interval reaches ±")
    assert "--processes 5" in lines[-1]
    pair.points.pop()
    assert not any("interval reaches" in l for l in fmt.sweep_pair_lines(pair, 2, "matmul"))


def ratio_point(n: int, ratios: list[float]) -> sweep.PairPoint:
    """A pair at size n whose processes read these wall-time ratios head / base."""
    return sweep.pair_point("b", timing(n, [10.0] * len(ratios)), "h", timing(n, [10.0 * r for r in ratios]), True)


def test_noise_near_one_is_the_same_and_no_crossing_is_claimed():
    from flametool.render import format as fmt

    # as in the H200 sample: the head faster by a third up to 1024, then ratios of 0.987-1.05 that flip
    pts = [ratio_point(n, [0.66, 0.68, 0.67]) for n in (256, 512, 1024)]
    pts += [ratio_point(2048, [1.01, 1.03, 1.02]), ratio_point(4096, [0.985, 0.99, 0.98]),
            ratio_point(8192, [1.01, 1.02, 1.015])]
    even, stretches, inconclusive = sweep.verdicts(pts)
    assert even == [] and inconclusive == []
    assert [(s.side, s.low[0], s.high[0], s.first, s.last) for s in stretches] == [
        (-1, 256, 1024, True, False), (0, 2048, 8192, False, True)]
    lines = fmt.sweep_pair_lines(sweep.SweepPair("b", "h", True, pts, even, stretches, inconclusive), 3, "matmul")
    text = "\n".join(lines)
    assert "h is faster up to 1024" in text
    assert "take the same wall time within ±" in text and "from 2048 up" in text
    reach = stretches[1].reach
    assert f"±{reach:.1%} from 2048 up" in text
    assert "faster below" not in text and "same wall time at about" not in text


def test_a_crossing_is_claimed_where_the_intervals_are_apart():
    from flametool.render import format as fmt

    pts = [ratio_point(512, [0.80, 0.82, 0.81]), ratio_point(1024, [1.20, 1.22, 1.21])]
    even, stretches, inconclusive = sweep.verdicts(pts)
    assert len(even) == 1 and 512 < even[0].size < 1024 and even[0].rising
    lines = fmt.sweep_pair_lines(sweep.SweepPair("b", "h", True, pts, even, stretches, inconclusive), 3, "matmul")
    assert any("h is faster below it, b above it" in l for l in lines)


def test_a_workloads_crossing_and_crossover_are_said_as_its_shape():
    from flametool.render import format as fmt

    # a workload's B,I,O grown at I = O = 1024: the axis reads the cube root of B*I*O (about 459 between B = 64 and
    # 128), none of its figures; the sentences said "at about 459"
    def shaped(shape: list[int], cpu: list[float], gpu: list[float] | None = None) -> SweepPoint:
        return SweepPoint(shape, 100, [Loops([c], [g] if g is not None else [], [0], [c])
                                       for c, g in zip(cpu, gpu or [None] * len(cpu))])

    pts = [sweep.pair_point("b", shaped([b, 1024, 1024], [10.0] * 3), "h", shaped([b, 1024, 1024], [r * 10 for r in rs]),
                            True) for b, rs in ((64, (0.80, 0.82, 0.81)), (128, (1.20, 1.22, 1.21)))]
    even, stretches, inconclusive = sweep.verdicts(pts)
    assert len(even) == 1
    at = even[0].size ** 3 / 1024 ** 2  # B where the ratio crosses 1, on the axis's log scale
    assert 64 < at < 128
    pair = sweep.SweepPair("b", "h", True, pts, even, stretches, inconclusive)
    text = "\n".join(fmt.sweep_pair_lines(pair, 3, "w.py:step"))
    assert f"the same wall time at about {round(at)}x1024x1024 (between 64x1024x1024 and 128x1024x1024" in text, text
    # an op's is the axis's number, as before
    assert f"at about {even[0].size:,.0f} (between" in "\n".join(fmt.sweep_pair_lines(pair, 3, "matmul"))
    # adam's N,S, S grown 4x: its crossover is at a shape, the figure that stays kept
    curve = [sweep.point(shaped([16, s], [10.0, 10.0], [g, g]))
             for s, g in ((1024, 10.0), (4096, 10.01), (16384, 20.0), (65536, 80.0))]
    c = sweep.crossover(curve, "adam")
    assert c.size == pytest.approx(16 * 8192)  # the GPU line (S doubling doubles it) meets 10 us there
    assert f"overtakes host time at about 16x8192 (between 16x4096, host-bound," in c.text, c.text

def test_a_too_wide_interval_is_inconclusive_not_a_finding():
    from flametool.render import format as fmt

    # 42x with an interval from about 1.6 to 1135: said to be inconclusive, never "furthest from even"
    pts = [ratio_point(32, [1.6, 1100.0, 42.0]), ratio_point(64, [1.01, 1.0, 0.99])]
    even, stretches, inconclusive = sweep.verdicts(pts)
    assert inconclusive == [pts[0]] and [s.side for s in stretches] == [0]
    lines = fmt.sweep_pair_lines(sweep.SweepPair("b", "h", True, pts, even, stretches, inconclusive), 3, "matmul")
    assert any(l.startswith("at 32 the wall-time ratio is inconclusive") for l in lines)
    assert not any("furthest from even at 32" in l for l in lines)
    assert any("furthest from even at 64" in l for l in lines)
    # the one conclusive size is not "every size" (it said "take the same wall time ... at every size")
    text = "\n".join(lines)
    assert "at every size with a conclusive ratio (1 of 2)" in text and "wall time within ±" in text, text
    assert "at every size (" not in text.replace("at every size with", "")


def test_a_sweep_records_the_operands_at_each_size(swept):
    out, proc = swept
    results = rundir.load(out).results
    numpy_ops, torch_ops = results["numpy"].operands, results["torch"].operands
    assert [o.shape for o in numpy_ops] == [[n, n, n] for n in (8, 32, 128, 512)]
    assert numpy_ops == torch_ops and len({o.fingerprint for o in numpy_ops}) == 4
    assert "operands differ" not in proc.stdout


def test_unlike_operands_in_a_sweep_are_said(swept, tmp_path):
    import shutil


    run_dir = tmp_path / "edited"
    shutil.copytree(swept[0], run_dir)
    run = rundir.load(run_dir)
    run.results["torch"].operands[0].fingerprint = "000000000000"
    rundir.save(run_dir, run)
    page = render.show("html", dispatch.analyse_dir(run_dir))
    assert "operands differ: at 8,8,8 float32, " in page


def test_a_sweeps_extra_host_time_is_the_difference_of_the_host_figures_shown():
    """The page's and the terminal's "extra host" at a size is the slower case's host figure minus the faster's as
    the tables show them (it was the raw difference: +5.71 beside 17.44 and 11.74); the terminal's column comes
    from the same function (fmt.extra_host)."""
    checked = 0
    # same-operands has a host figure shown whole ('125 us' beside '79.89 us': +45.11, not the raw +45.24)
    for name in ("h200-sweep-fp16", "h200-sweep-same-operands"):
        run = Path(__file__).resolve().parent.parent / "samples" / name
        if run.is_dir():
            checked += extra_hosts_checked(dispatch.analyse_dir(run))
    if not checked:
        pytest.skip("the sweep samples are not recorded")


def extra_hosts_checked(a) -> int:
    from flametool.render import sweep_page

    columns, rows = sweep_page.cells(a)
    checked = 0
    for sp in a.pairs:
        extra_col = columns.index(f"{sp.head} / {sp.base} wall") + 1
        for row in rows:
            cell = row[extra_col].text
            if not cell.startswith(f"{sp.head} +") and not cell.startswith(f"{sp.base} +"):
                continue
            slower, text = cell.split(" +")
            faster = sp.base if slower == sp.head else sp.head
            host = {c: float(row[columns.index(f"{c} host")].text.replace(" us", "").replace(",", ""))
                    for c in (slower, faster)}
            assert float(text.replace(" us", "")) == pytest.approx(host[slower] - host[faster], abs=1e-9), row[0].text
            checked += 1
    return checked


def test_a_sizes_layers_add_up_to_the_host_figure_the_tables_show(tmp_path):
    """--sample's layers at a size are scaled to the case's host time there as the tables, export and diff give
    it (pooled in its group at the median process's speed): scaled by the median of every loop, a CPU sweep's
    layer table read numpy 1.23 us in all beside its host column's 1.21 and diff's 1.21."""
    from runbuild import make_sweep

    out = make_sweep(tmp_path / "sweep", {
        "numpy": {8: ("np_step (case.py:1);numpy (libnumpy.so) 40\n", 4.0, None)},
        "torch": {8: ("torch_step (case.py:1);aten (libaten.so) 40\n", 6.0, None)}}, processes=3)
    data = json.loads((out / "run.json").read_text())
    # numpy ran at 4, 4 and 8 us in its three processes, torch at 6 in each: the median of numpy's loops (4.04)
    # is not its figure at the median process's speed
    for loops, us in zip(data["results"]["numpy"]["points"][0]["processes"], (4.0, 4.0, 8.0)):
        loops["cpu_us"] = loops["wall_us"] = [us, us * 1.01]
    (out / "run.json").write_text(json.dumps(data))
    a = dispatch.analyse_dir(out)
    shown = {label: a.at(label, [8, 8, 8]).cpu_us for label in ("numpy", "torch")}
    assert shown["numpy"] != pytest.approx(4.04, rel=0.01)  # the figures differ, so the check below can fail
    for label, us in shown.items():
        assert a.layers["8"][label].us_per_call == pytest.approx(us, rel=1e-12), label
    said = render.show("terminal", a)
    layers_table = said.split("host time per call by layer")[1]
    assert f"{shown['numpy']:.2f}" in layers_table


def test_the_summary_says_which_case_failed_at_a_size_and_why(swept):
    """A pair's size where one of its cases failed is said so in every summary format, as the sweep's own tables
    say it; it read "not measured", as a size never run does."""
    out, _ = swept
    made = summary.of(dispatch.analyse_dir(out))
    rows = {(r.head, r.at): r for r in made.rows}
    for size in ("128", "512"):
        row = rows[("fails_from_128", size)]
        assert row.figures is None or row.figures.ratio is None
        assert row.note is not None and row.note.startswith("fails_from_128 failed: ") and "refuses" in row.note
        assert f"fails_from_128 vs numpy at size {size}: {row.note}" in render.show("text", made)
    doc = json.loads(render.show("json", made))
    assert [r["note"] for r in doc["rows"] if r["head"] == "fails_from_128"][2:] == [rows[("fails_from_128", s)].note
                                                                                      for s in ("128", "512")]
    assert "| fails\\_from\\_128 vs numpy | 128 | fails\\_from\\_128 failed: " in render.show("markdown", made)
    # the pair of the two that ran at every size has a ratio at each, and no failure beside it
    torch = [r for r in made.rows if r.head == "torch"]
    assert len(torch) == 4 and all(r.figures is not None and r.figures.ratio is not None for r in torch)
    assert not any(r.note and "failed" in r.note for r in torch)


def test_the_summary_says_a_size_the_sweep_calls_inconclusive_is_so():
    """A size whose interval is too wide to read is "inconclusive" in the sweep's tables and sentences, with no
    ratio; the summary gave its ratio in every format with nothing beside it, as if it were a finding."""
    from runbuild import new_run

    pts = [ratio_point(32, [1.6, 1100.0, 42.0]), ratio_point(64, [1.01, 1.0, 0.99])]
    a = sweep.SweepAnalysis(Path("sweep"), new_run({"op": "matmul"}))
    a.pairs.append(sweep.SweepPair("b", "h", True, pts, *sweep.verdicts(pts)))
    made = summary.of(a)
    wide, narrow = made.rows
    assert sweep.side(pts[0]) is None and wide.figures is pts[0].wall
    assert wide.note.startswith("inconclusive: the processes disagree") and narrow.note is None
    for fmt_ in ("text", "markdown"):
        assert wide.note in render.show(fmt_, made).replace("\\", ""), fmt_
    assert [r["note"] for r in json.loads(render.show("json", made))["rows"]] == [wide.note, None]


def test_every_column_of_the_pages_per_size_table_has_a_header():
    """The page's per-size table of a GPU sweep had a column per case saying 'host-bound' or 'GPU-bound' under an
    empty header."""
    from flametool.analyse import dispatch
    from flametool.render import sweep_page

    run = Path(__file__).parent.parent / "samples" / "h200-sweep-fp16"
    if not run.is_dir():
        pytest.skip("the H200 sweep sample is not recorded")
    columns, rows = sweep_page.cells(dispatch.analyse_dir(run))
    assert all(c.strip() for c in columns), columns
    bound = [i for i, c in enumerate(columns) if c.endswith(" bound")]
    assert bound and all(row[i].text in ("host-bound", "GPU-bound", "") for row in rows for i in bound)
