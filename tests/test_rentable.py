"""Only what a practitioner would rent (issue 39): multi-GPU options come in server shapes, jobs
sharded over several GPUs pay their exchanges at their links' pace (PCIe cards PCIe inside a
server and a shared network port across servers), and an option whose exchanges outlast its
compute is shown as such, never the answer."""

import pytest

from lab_utils import advisor, assumptions, basics, economics, hardware, interconnects, llms, splits

COMMUNICATION = ("interconnect", "network")


def rented_in_shapes(option) -> bool:
    spec = hardware.get(option.device)
    per_server = assumptions.value("max_devices")
    if option.n_devices > per_server:
        return option.n_devices % per_server == 0
    return option.n_devices in assumptions.server_shapes(spec)


def test_server_shapes_are_the_assumption_and_the_price_datas_counts():
    h100 = hardware.get("H100 SXM")
    assert assumptions.server_shapes(h100) == (1, 2, 4, 8)
    assert assumptions.server_shapes(h100, max_devices=4) == (1, 2, 4)
    assert basics.whole_servers(3, 8, assumptions.server_shapes(h100)) == (1, 4)
    assert basics.whole_servers(7, 8, assumptions.server_shapes(h100)) == (1, 8)
    assert basics.whole_servers(12, 8, assumptions.server_shapes(h100)) == (2, 16)


@pytest.mark.parametrize(
    "model, method, n_tokens",
    [("Llama-3.1-70B", "full", 1e9), ("Kimi-K2", "qlora", 1e7), ("Llama-3.1-8B", "full", 1e8)],
)
def test_every_multi_gpu_option_is_a_server_shape(model, method, n_tokens):
    advice = advisor.fine_tune(model, n_tokens, method=method, include_cpus=False)
    working = [o for o in advice.options if o.works and o.kind == "gpu"]
    assert working
    for option in working:
        assert rented_in_shapes(option), option.name


def test_links_pcie_inside_a_server_and_a_shared_port_across():
    pcie = interconnects.get("RTX 4090").pcie_bytes_per_s_each_way
    assert splits.job_link("RTX 4090", 4, 8) == splits.Link(pcie, "PCIe")
    across = splits.job_link("RTX 4090", 16, 8)
    assert across.medium == "network"
    assert across.bytes_per_s == min(pcie, assumptions.value("ethernet_server_bytes_per_s") / 8)
    assert splits.job_link("H100 SXM", 8, 8).medium == "NVLink"
    assert splits.job_link("H100 SXM", 16, 8).bytes_per_s == assumptions.value("inter_node_bytes_per_s")
    assert splits.job_link("RTX 3090", 2, 8).medium == "NVLink"  # one bridge joins two cards
    assert splits.job_link("RTX 3090", 4, 8).medium == "PCIe"


def test_a_70b_full_fine_tune_on_rtx_4090s_pays_the_network_and_is_not_the_answer():
    """The learner's '312 x RTX 4090 (39 servers), 6.8 h': FSDP over 39 servers of PCIe cards
    exchanges the weights and gradients every step through one Ethernet port per server."""
    advice = advisor.fine_tune("Llama-3.1-70B", 1e9, method="full")
    option = advice.option("312 x RTX 4090 (39 servers)")
    run = economics.fine_tune_estimate("Llama-3.1-70B", 1e9, method="full", gpu="RTX 4090").run
    sent = economics.sharded_communication(
        llms.get("Llama-3.1-70B").n_params,
        1e9,
        method="full",
        tokens_per_step=assumptions.value("batch") * assumptions.value("seq_len"),
    )(312)
    assert run.communication_hours == pytest.approx(
        sent / splits.job_link("RTX 4090", 312, 8).bytes_per_s / 3600
    )
    assert option.bound == run.bound == "network"
    assert option.hours == pytest.approx(run.communication_hours)  # the exchanges set the time
    assert option.hours > 6.8  # the learner saw 6.8 h with no exchanges
    assert advice.best.bound not in COMMUNICATION and advice.options[0] is advice.best


def test_communication_hours_are_the_bytes_at_the_links_pace():
    run = economics.run_estimate(
        "H100 SXM", 1e18, n_devices=16, communication=lambda n: n * 1e12, max_devices=8
    )
    link = splits.job_link("H100 SXM", 16, 8)
    assert run.communication_hours == pytest.approx(16e12 / link.bytes_per_s / 3600)
    alone = economics.run_estimate("H100 SXM", 1e18, n_devices=1, communication=lambda n: 1e15)
    assert alone.communication_hours == 0.0 and alone.bound == "compute"


def test_a_communication_bound_option_is_ranked_after_a_working_one():
    advice = advisor.fine_tune("Llama-3.1-70B", 1e9, method="full")
    assert any(o.bound in COMMUNICATION for o in advice.options)
    for ranked in (advice, advice.ranked("energy")):
        assert ranked.options[0].works and ranked.options[0].bound not in COMMUNICATION
