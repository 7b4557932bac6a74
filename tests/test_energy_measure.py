"""The energy meter with fake counters: NVML and RAPL stubs (a RAPL counter that wraps), an Apple
monitor stub, and machines with no counter at all; a fake clock makes the watts exact."""

import pathlib
import sys
import types

import pytest

from lab_utils import energy_measure


class FakeClock:
    def __init__(self, *times):
        self.times = list(times)

    def __call__(self):
        return self.times.pop(0)


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock(100.0, 102.5)  # a block of 2.5 s
    monkeypatch.setattr(energy_measure, "_clock", fake)
    return fake


class NVMLError(Exception):
    pass


def fake_nvml(readings_mj, *, supported=None, init_error=None):
    """A module shaped like pynvml: GPU i reports readings_mj[i].pop(0) per read."""
    state = {"shutdown": 0, "reads": 0}
    supported = supported or [True] * len(readings_mj)

    def init():
        if init_error:
            raise init_error

    def energy(handle):
        if not supported[handle]:
            raise NVMLError("Not Supported")
        state["reads"] += 1
        return readings_mj[handle].pop(0)

    module = types.SimpleNamespace(
        NVMLError=NVMLError,
        nvmlInit=init,
        nvmlDeviceGetCount=lambda: len(readings_mj),
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetTotalEnergyConsumption=energy,
        nvmlShutdown=lambda: state.__setitem__("shutdown", state["shutdown"] + 1),
    )
    return module, state


def rapl_tree(root: pathlib.Path, zones):
    """zones: {dir name: (name, [energy_uj per read], max_energy_range_uj)}; the file is rewritten
    per read by the returned advance()."""
    for directory, (name, _, span) in zones.items():
        zone = root / directory
        zone.mkdir(parents=True)
        (zone / "name").write_text(name + "\n")
        (zone / "max_energy_range_uj").write_text(f"{span}\n")

    def advance():
        for directory, (_, values, _) in zones.items():
            (root / directory / "energy_uj").write_text(f"{values.pop(0)}\n")

    advance()
    return advance


def test_nvml_counts_each_gpu_in_joules(clock):
    # GPU 0: 1,000,000 mJ -> 1,600,000 mJ = 600 J; GPU 1: 50 J -> 100 J = 50 J (the probe reads once more)
    nvml, state = fake_nvml([[1_000_000, 1_000_000, 1_600_000], [50_000, 50_000, 100_000]])
    with energy_measure.meter(sources=("nvml",), nvml=nvml) as m:
        pass
    r = m.reading
    assert r.status == "measured" and r.measured
    assert r.joules_by_counter == (("nvml:gpu0", 600.0), ("nvml:gpu1", 50.0))
    assert r.joules == 650.0
    assert r.elapsed_s == 2.5 and r.average_watts == 260.0
    assert state["shutdown"] == 1
    assert "650 J" in str(r) and "measured here" in str(r)


def test_nvml_skips_a_gpu_without_counter_and_says_why(clock):
    nvml, _ = fake_nvml([[0, 0, 2_000], [0]], supported=[True, False])
    with energy_measure.meter(sources=("nvml",), nvml=nvml) as m:
        pass
    assert m.reading.joules == 2.0
    assert "GPU 1 reports no energy counter" in m.reading.reason


def test_rapl_reads_packages_and_handles_the_counter_wrap(tmp_path, clock):
    span = 262_143_328_850
    work = rapl_tree(
        tmp_path,
        {
            "intel-rapl:0": ("package-0", [span - 1_000_000, 4_000_000], span),  # wraps: 1 J + 4 J = 5 J
            "intel-rapl:1": ("package-1", [10_000_000, 17_500_000], span),  # 7.5 J
            "intel-rapl:2": (
                "psys",
                [0, 99_000_000],
                span,
            ),  # the platform: overlaps the packages, not counted
        },
    )
    (tmp_path / "intel-rapl:0:0").mkdir()  # a part of package 0 (its cores): not a package zone
    with energy_measure.meter(sources=("rapl",), powercap_root=tmp_path) as m:
        work()  # the counters move while the block runs
    r = m.reading
    assert r.joules_by_counter == (("rapl:package-0", 5.0), ("rapl:package-1", 7.5))
    assert r.joules == 12.5 and r.average_watts == 5.0


def test_rapl_wrap_arithmetic_alone():
    counter = energy_measure._Rapl([], [1000], ("rapl:package-0",))
    counter._start = (990,)
    counter._read = lambda: (15,)
    assert counter.stop() == (("rapl:package-0", 25 / 1e6),)  # 990 -> 1000 (wrap) -> 15: 25 uJ


def test_rapl_readable_by_root_only_is_a_status_with_the_fix(tmp_path, monkeypatch, clock):
    rapl_tree(tmp_path, {"intel-rapl:0": ("package-0", [5], 100)})
    original = pathlib.Path.read_text

    def refuse(self, *args, **kwargs):
        if self.name == "energy_uj":
            raise PermissionError(13, "Permission denied")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_text", refuse)
    with energy_measure.meter(sources=("rapl",), powercap_root=tmp_path) as m:
        pass
    assert m.reading.status == "no counter" and m.reading.joules is None
    assert "root only" in m.reading.reason and "chmod" in m.reading.reason


def test_apple_monitor_parts_in_joules(clock):
    class Monitor:
        def begin_window(self, label):
            self.label = label

        def end_window(self, label):
            assert label == self.label
            return types.SimpleNamespace(cpu_total_mj=1500, gpu_mj=2500, dram_mj=None, ane_mj=0)

    apple = types.SimpleNamespace(AppleEnergyMonitor=Monitor)
    with energy_measure.meter(sources=("apple",), apple=apple) as m:
        pass
    assert m.reading.joules_by_counter == (("apple:cpu", 1.5), ("apple:gpu", 2.5), ("apple:ane", 0.0))
    assert m.reading.joules == 4.0


def test_no_counter_is_a_status_with_every_reason(tmp_path, monkeypatch, clock):
    monkeypatch.setattr(energy_measure.sys, "platform", "linux")
    nvml, _ = fake_nvml([], init_error=NVMLError("Driver Not Loaded"))
    reading = energy_measure.measure(lambda: None, powercap_root=tmp_path / "absent", nvml=nvml)
    assert reading.status == "no counter" and not reading.measured
    assert reading.joules is None and reading.average_watts is None
    assert reading.elapsed_s == 2.5
    assert "NVML: no NVIDIA driver" in reading.reason
    assert "RAPL: no" in reading.reason and "Apple: not a Mac" in reading.reason
    assert str(reading).startswith("no energy counter here")


def test_nvidia_ml_py_missing_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml now raises ImportError
    counters, reason = energy_measure.find_counters(sources=("nvml",))
    assert counters == () and "pip install nvidia-ml-py" in reason


@pytest.mark.parametrize(
    "call, parameter",
    [
        (lambda: energy_measure.find_counters(sources=("rapl", "watts")), "sources"),
        (lambda: energy_measure.find_counters(sources="rapl"), "sources"),
        (lambda: energy_measure.measure(lambda: None, calls=0), "calls"),
    ],
)
def test_bad_input_names_the_parameter(call, parameter):
    with pytest.raises((ValueError, TypeError), match=parameter):
        call()
