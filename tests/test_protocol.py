"""protocol: every job and message survives the pipe whole, and what is not a message is None."""

import pytest

from flametool.measure import protocol
from flametool.workload.cases import CaseSpec
from flametool.measure.protocol import (CaseProfiled, CaseTimed, Done, Failed, JobCase, Phase, PlanItem, Point,
    PointCase, ProfileJob, SampleReady, SweepItem, SweepJob, Swept, Timed, TimedLoops, TimeJob)
from flametool.run.record import DeviceInfo, Operands
from flametool.run.timing import Loops

CASE = JobCase("numpy", CaseSpec("numpy", "numpy_matmul", module="flametool.cases"), "float32")
LOOPS = Loops([1.5, 1.25], [2.0, 2.5], [0, 2], [1.75, 1.5])
COMMON = dict(device="cpu", iters=10, warmup=2, repeats=3, extend_rounds=False, parent_pid=123, timed_seconds=0.5)


@pytest.mark.parametrize("job", [
    TimeJob(**COMMON, cases=[CASE], plan=[PlanItem([8, 8, 8], None, "timing", decide=True)], sample_shape=[4, 4, 4]),
    TimeJob(**COMMON, cases=[CASE], plan=[PlanItem([8, 8, 8], {"numpy": 7}, "sample_timing")]),
    SweepJob(**COMMON, cases=[CASE], points=[SweepItem([8, 8, 8], None), SweepItem([16, 16, 16], {"numpy": 3})]),
    ProfileJob(**COMMON, case=CASE, shape=[8, 8, 8], steps=40, sample=False, prof_path="/x.prof", max_sample_seconds=9.5),
])
def test_a_job_arrives_as_it_was_sent(job):
    assert protocol.decode_job(protocol.encode_job(job)) == job


@pytest.mark.parametrize("message", [
    Phase("timed", shape=[8, 8, 8], repeat=2, of=3),
    Phase("timed", shape=[8, 8, 8], repeat=4, of=3, seconds=0.5),
    Phase("warmup", label="numpy", calls=50),
    Phase("cprofile"),
    SampleReady(4321),
    Failed("MemoryError: out of memory"),
    Point(0, {"numpy": 1}, DeviceInfo(), {
        "numpy": PointCase(None, 20, 20, LOOPS, Operands([8, 8, 8], "ab12", "rng", "every byte")),
        "torch": PointCase(error="failed here")}),
    Done(Timed({"numpy": CaseTimed(1, DeviceInfo(device_name="NVIDIA H200", device_index=0), [Operands([8, 8, 8], "ab", "rng", "all")],
                                   TimedLoops([8, 8, 8], 20, 20, LOOPS, True, "host-bound"))},
               {"torch": "ImportError: no torch"}, [8, 8, 8], "host-bound")),
    Done(Swept(4)),
    Done(CaseProfiled(LOOPS, 100, 1.5, 4000, [[1.0, 2.0]], 100)),
])
def test_a_message_arrives_as_it_was_sent(message):
    line = protocol.encode(message)
    assert line.endswith("\n") and line.count("\n") == 1
    assert protocol.decode(line) == message


@pytest.mark.parametrize("line", [
    "not json\n", "{}\n", "[1]\n", '"text"\n', '{"event": 5}\n', '{"event": "phase"}\n',
    '{"event": "result", "result": {}}\n', '{"event": "result", "job": "time", "result": {"cases": 3}}\n',
    '{"event": "point", "index": 0, "ops_per_step": {}, "device_info": {}, "cases": {"a": {"calls": 1}}}\n',
])
def test_what_is_not_a_whole_message_is_none(line):
    assert protocol.decode(line) is None


def test_a_message_after_stray_bytes_is_found():
    assert protocol.decode("junk" + protocol.encode(SampleReady(7))) == SampleReady(7)


def test_each_job_names_what_it_returns():
    assert protocol.RESULT_OF == {TimeJob: Timed, SweepJob: Swept, ProfileJob: CaseProfiled}


@pytest.mark.parametrize("line, event", [
    ('{"event": "phase", "phase": "cprofile"}\n', "phase"),
    ('not json\n', None),
    ('{}\n', None),
    ('[1]\n', None),
    ('"text"\n', None),
    ('{"event": 5}\n', None),
    ('junk without a newline{"event": "result", "job": "sweep", "result": {"points": 2}}\n', "result"),
    ('{"event": "result", "result": {}}\n', None),  # not a result of any job: a stray line
])
def test_parse_message(line, event):
    msg = protocol.decode(line)
    assert (msg and msg.event) == event
