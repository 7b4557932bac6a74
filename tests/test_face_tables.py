"""The tables the faces print (issue 24, "Faces"): each defect a learner met, with a test."""

import re

import pytest

from lab_utils import advisor, cli, hardware, memory, units


def table_rows(text: str) -> list[dict]:
    """The rows of a tabulate "simple" table (header, dashes, rows) as dicts by header."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if set(line) <= {"-", " "} and "-" in line)
    spans = [m.span() for m in re.finditer(r"-+", lines[start])]
    spans[-1] = (spans[-1][0], None)  # the last column runs to the end of the line

    def cells(line):
        return [line[a:b].strip() for a, b in spans]

    header = cells(lines[start - 1])
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip() or line.startswith("("):
            break
        rows.append(dict(zip(header, cells(line))))
    return rows


@pytest.fixture(scope="module")
def seventy_b_full():
    """A job with every kind of row: several servers, CPUs, no price, no fit, Apple laptops."""
    return advisor.fine_tune("Llama-3.1-70B", 1e9, method="full")


def test_hardware_shows_every_byte_field_with_its_unit(capsys):
    assert cli.main(["hardware", "h100"]) == 0
    rows = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines() if line.strip())
    assert not any(re.fullmatch(r"\d+", rows[name].strip()) for name in rows if name.endswith("_bytes"))
    l2 = hardware.get("H100 SXM").l2_bytes
    assert rows["l2_bytes"].startswith(f"{units.format_bytes(l2)} ({units.format_bytes(l2, binary=True)}")
    assert rows["memory_bytes"].strip() == "80.0 GB"


def test_the_energy_column_never_switches_notation(seventy_b_full):
    rows = table_rows(seventy_b_full.table())
    cells = [row["kWh per job"] for row in rows]
    assert any(len(cell) > 4 for cell in cells)  # thousands: where '1.45e+03' used to appear
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*(\.\d+)?|-", cell) for cell in cells), cells


def test_rows_that_do_not_fit_show_no_price_date(seventy_b_full):
    rows = table_rows(seventy_b_full.table())
    unfit = [row for row in rows if row["fits"] == "no"]
    assert unfit and all(row["price date"] == "-" and row["$ per job"] == "-" for row in unfit)
    assert any(row["price date"] not in ("-", "") for row in rows if row["fits"] == "yes")


def test_an_unfit_row_hides_a_price_date_it_carries(seventy_b_full):
    """The table, not only the advisor, keeps a price date off a row that does not fit."""
    import dataclasses

    unfit = next(o for o in seventy_b_full.options if not o.fits)
    dated = dataclasses.replace(unfit, price_date="2025-08", price_source="a price list")
    table = dataclasses.replace(seventy_b_full, options=(dated,)).table()
    assert table_rows(table)[0]["price date"] == "-" and "2025-08" not in table


def test_options_that_tie_sort_by_device_count_not_by_text(seventy_b_full):
    """'116 x T4' once came before '12 x H200': rows with no cost and no time go by n, numerically."""
    rows = [row for row in table_rows(seventy_b_full.table()) if row["$ per job"] == "-"]
    counts = [int(row["n"]) for row in rows]
    assert len(set(counts)) > 2 and counts == sorted(counts)


def test_apple_laptops_are_never_rented_by_the_server(seventy_b_full):
    apple = [o for o in seventy_b_full.options if o.name.endswith(("Apple M1 Pro", "Apple M1 Max"))]
    assert apple and all(o.n_devices > 8 for o in apple)  # more than one "server" of them is needed
    assert all(
        "servers" not in o.name and not o.works and "no offer to rent it by the server" in o.why
        for o in apple
    )


def test_memory_shows_the_usable_figure_behind_its_verdict(capsys):
    """Mistral-7B in bf16 needs two T4s: the table shows the usable memory that says why."""
    assert cli.main(["memory", "--model", "mistral-7b-v0.1"]) == 0
    out = capsys.readouterr().out
    total = memory.job_estimate("Mistral-7B-v0.1", "inference").total_bytes
    t4 = next(row for row in table_rows(out.split("\n\n", 1)[1]) if row["GPU"] == "T4")
    usable = memory.usable_bytes("T4")
    assert t4["vendor memory"] == units.format_bytes(hardware.get("T4").memory_bytes)
    assert t4["usable"] == units.format_bytes(usable)
    assert hardware.get("T4").memory_bytes > total > usable  # the vendor figure alone would say "fits"
    assert t4["verdict"] == "needs at least 2 (split evenly)"
    assert "usable: the vendor's memory less the CUDA context reserve" in out
