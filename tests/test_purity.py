"""The calculators are pure: importing them and calling them loads no torch, no plotting and no
measuring module (lab_utils.machine, lab_utils.timing), so they answer in a fraction of a second
on any machine, and the figures and measurements stay in their own modules (issue 15)."""

import json
import subprocess
import sys
import textwrap

FORBIDDEN = ("torch", "matplotlib", "lab_utils.plots", "lab_utils.machine", "lab_utils.timing")

CALLS = {
    "checks": "checks.number('x', 1.0)",
    "units": "units.format_bytes(2**30)",
    "lookup": "lookup.key('H100 SXM')",
    "catalogs": "catalogs.read('hardware.toml')",
    "hardware": "hardware.get('T4').ridge_point('fp16')",
    "llms": "llms.get('llama-3.1-8b')",
    "prices": "prices.hourly_prices()",
    "assumptions": "assumptions.catalog()",
    "roofline": "roofline.attainable_flops(65e12, 320e9, np.array([1.0, 100.0, 1000.0]))",
    "memory": "memory.job_estimate('llama-3.1-8b', method='inference')",
    "economics": "economics.cost_per_million_tokens(2.0, 1000.0)",
    "interconnects": "interconnects.get('H100 SXM').pcie_bytes_per_s_each_way",
    "serving": "serving.estimate('llama-3.1-8b', device='H100 SXM', prompt_len=500, output_len=200)",
    "serverless": "serverless.simulate([0.0, 1.0], service_s=0.5, cold_start_s=2.0, idle_timeout_s=5.0,"
    " max_workers=2, price_per_worker_s=0.001)",
    "advisor": "advisor.fine_tune('llama-3.1-8b', 1e7, method='full')",
    "energy": "energy.emissions_kg(energy.job_energy_kwh(2.0, 8, 700.0))",
    "comms": "comms.fit_all_reduce([1e6, 4e6], [1e-3, 3e-3], 4)",
    "routing": "routing.mix([routing.Route('CPU', 0.8, 0.005), routing.Route('GPU', 0.2, 0.2)]).p95_s",
    "parallel": "parallel.fit_parallel_fraction([1, 2, 4], [1.0, 1.8, 3.0])",
    "published": "published.table()",
    "engines": "engines.get('llama.cpp-metal').decode_efficiency_for(0.5)",
    "splits": "splits.cluster_plan('llama-3.1-70b', 'h100', 8, 4)",
}
"""Each pure module and one representative call of it."""

SCRIPT = textwrap.dedent("""
    import importlib, json, sys
    import numpy as np

    forbidden, calls = json.loads(sys.argv[1])
    loaded = lambda: sorted(name for name in forbidden if name in sys.modules)
    found = {}
    for name, call in calls.items():
        module = importlib.import_module(f"lab_utils.{name}")
        found[f"import lab_utils.{name}"] = loaded()
        eval(call, {name: module, "np": np})
        found[f"lab_utils.{call}"] = loaded()
    print(json.dumps(found))
""")


def test_pure_modules_load_no_torch_no_plots_and_no_measuring_module():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps([FORBIDDEN, CALLS])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert len(found) == 2 * len(CALLS)
    impure = {step: names for step, names in found.items() if names}
    assert not impure, f"these steps loaded {FORBIDDEN}: {impure}"
