"""The price of any run, CPU or GPU: :func:`run_estimate` (hours, bound, servers and dollars of one
job on a catalog device) and the bytes a sharded job sends (:func:`sharded_communication`).
Named by ``lab_utils.economics``. Pure Python: no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab_utils import assumptions, basics, checks, energy, hardware, splits
from lab_utils.economics_flops import (
    mfu_assumption,
    training_hours,
)
from lab_utils.prices import SECONDS_PER_HOUR

# --- one job on one device type: the price of any run, CPU or GPU ---------------------------------


@dataclass(frozen=True)
class RunEstimate:
    """Hours and dollars of one job on ``n_devices`` of the catalog ``device`` (a CPU server or
    a GPU): ``hours`` wall clock, the larger of the compute time (FLOPs at ``mfu`` of the
    ``dtype`` peak) and the memory time (bytes moved at a share of the bandwidth), ``bound``
    saying which. ``n_servers``: servers rented (beyond one, whole servers: ``n_devices`` is
    then what they hold). ``price``: the price that stands for one device-hour
    (``assumptions.device_price``), or the one given; its ``usd_per_hour`` None when the data has
    none. ``assumptions``: (name, value) of each default taken. ``communication_hours``: the
    bytes the devices exchange (FSDP's gathers and gradient reductions) at the pace of their
    links, overlapped with compute (``hours`` is the longest of the three): bound "interconnect"
    (inside one server) or "network" (across servers) when it is the longest; ``notes``: what
    the estimate could not time."""

    device: str
    kind: str
    n_devices: int
    n_servers: int
    dtype: str
    mfu: float
    hours: float
    bound: str
    price: assumptions.DevicePrice
    assumptions: tuple[tuple[str, object], ...] = ()
    communication_hours: float = 0.0
    notes: tuple[str, ...] = ()

    @property
    def device_hours(self) -> float:
        """Device-hours billed: every device for the whole job."""
        return self.hours * self.n_devices

    @property
    def cost_per_job_usd(self) -> float | None:
        """Dollars for the job: device-hours x price per device-hour (None without a price)."""
        usd = self.price.usd_per_hour
        return None if usd is None else self.device_hours * usd

    @property
    def energy_per_job_kwh(self) -> float | None:
        """kWh the devices draw over the job at ``power_share_of_tdp`` of their TDP
        (``energy.job_energy_kwh``); None without a TDP in the catalog."""
        tdp_watts = hardware.as_spec(self.device).tdp_watts
        return energy.job_energy_kwh(self.hours, self.n_devices, tdp_watts) if tdp_watts else None


def run_estimate(
    device,
    flops,
    *,
    n_devices=1,
    mfu=None,
    dtype=None,
    bytes_moved=0.0,
    bandwidth_efficiency=1.0,
    usd_per_hour=None,
    max_devices=None,
    cpu_offer=None,
    communication=None,
) -> RunEstimate:
    """Price one job of ``flops`` (moving ``bytes_moved`` at ``bandwidth_efficiency`` of the
    memory bandwidth) on ``n_devices`` of ``device``, CPU or GPU: the one place a run's hours
    and dollars are computed (``fine_tune_estimate`` and every option of ``advisor`` ask it).

    GPUs are rented in server shapes (``assumptions.server_shapes``: 3 GPUs rent a 4-GPU server)
    and beyond one server of ``max_devices`` (None: the assumption) as whole servers
    (``basics.whole_servers``), priced as such; ``communication`` (a function of the devices
    rented, the bytes each sends over the job; None: nothing) is timed at their links' pace
    (``splits.job_link``); hours by :func:`training_hours` at the dense
    peak in ``dtype`` (``basics.peak_flops``; None: the dtype the device computes in); ``mfu``
    None is the regime's assumption: ``cpu_mfu`` on a CPU, :func:`mfu_assumption` on GPUs;
    ``usd_per_hour`` None is the price that stands for the device (``assumptions.device_price``,
    a CPU's from ``cpu_offer``). ValueError when the catalog lacks the peak, or the bandwidth a
    job moving bytes needs."""
    spec = hardware.as_spec(device)
    flops = checks.number("flops", flops)
    bytes_moved = checks.number("bytes_moved", bytes_moved, strict=False)
    values, taken = assumptions.resolve(max_devices=max_devices)
    shapes = assumptions.server_shapes(spec, values["max_devices"]) if spec.kind == "gpu" else None
    n_servers, n_devices = basics.whole_servers(n_devices, values["max_devices"], shapes)
    if shapes and n_devices > 1:
        taken["server_gpu_counts"] = assumptions.value("server_gpu_counts")
    if n_servers == 1:
        taken.pop("max_devices", None)
    if dtype is None:
        dtype = taken["compute_dtypes"] = basics.peak_flops(spec)[0]
    dtype, peak = basics.peak_flops(spec, dtype)
    if mfu is None:
        regime = "cpu_mfu" if spec.kind == "cpu" else mfu_assumption(n_devices, dtype)
        mfu = taken[regime] = assumptions.value(regime)
    if usd_per_hour is None:
        price = assumptions.device_price(
            spec, cpu_offer=cpu_offer, n_gpus=n_devices, max_devices=values["max_devices"]
        )
        taken["price_rule"] = price.offer
    else:
        price = assumptions.DevicePrice(
            checks.number("usd_per_hour", usd_per_hour, strict=False), "given", "given", "given"
        )
    compute_h = training_hours(flops, peak_flops=peak, mfu=mfu, n_devices=n_devices)
    memory_h = 0.0
    if bytes_moved:
        if not spec.bandwidth_bytes_per_s:
            raise ValueError(
                f"device={spec.name!r}: the catalog has no memory bandwidth to time the bytes moved"
            )
        efficiency = checks.number("bandwidth_efficiency", bandwidth_efficiency, maximum=1.0)
        memory_h = bytes_moved / (spec.bandwidth_bytes_per_s * efficiency * n_devices) / SECONDS_PER_HOUR
    communication_h, notes = _communication_hours(
        spec, n_devices, values["max_devices"], communication, taken
    )
    hours = {"compute": compute_h, "bandwidth": memory_h}
    hours["network" if n_servers > 1 else "interconnect"] = communication_h
    bound = max(hours, key=hours.get)
    return RunEstimate(
        device=spec.name,
        kind=spec.kind,
        n_devices=n_devices,
        n_servers=n_servers,
        dtype=dtype,
        mfu=checks.number("mfu", mfu, maximum=1.0),
        hours=hours[bound],
        bound=bound,
        price=price,
        assumptions=tuple(taken.items()),
        communication_hours=communication_h,
        notes=notes,
    )


def _communication_hours(spec, n_devices, per_server, communication, taken) -> tuple[float, tuple[str, ...]]:
    """Hours the ``communication(n_devices)`` bytes per device take at the pace of the job's
    links (``splits.job_link``), and a note when the data has no links for the device."""
    if communication is None or n_devices == 1:
        return 0.0, ()
    try:
        link = splits.job_link(spec, n_devices, per_server)
    except ValueError:
        return 0.0, (
            f"{spec.name}: no link data (lab_utils/data/interconnects.toml): communication not timed",
        )
    taken.update(link.assumptions)
    sent = checks.number("communication", communication(n_devices), strict=False)
    return sent / link.bytes_per_s / SECONDS_PER_HOUR, ()


def sharded_communication(n_params, n_tokens, *, method: str, tokens_per_step):
    """The bytes each of n GPUs sends over a fine-tune of ``n_params`` on ``n_tokens`` tokens,
    sharded (``splits.sharded_fine_tune``), each GPU taking ``tokens_per_step`` tokens (batch x
    sequence) per step: a function of n, as :func:`run_estimate`'s ``communication`` takes it."""
    n_params = checks.number("n_params", n_params)
    n_tokens = checks.number("n_tokens", n_tokens)
    tokens_per_step = checks.count("tokens_per_step", tokens_per_step)

    def sent(n_gpus: int) -> float:
        steps = n_tokens / (n_gpus * tokens_per_step)
        return steps * splits.sharded_fine_tune(n_params, n_gpus, method=method).bytes_per_step

    return sent
