"""The committed CUDA probe source is what the generator writes, for every qualifier."""

from importlib.resources import files

import tcsim
from tcsim.hw.probes import probe_source


def test_probes_cu_is_up_to_date():
    committed = (files("tcsim.hw") / "probes.cu").read_text()
    assert committed == probe_source(), (
        "tcsim/hw/probes.cu is stale: run python -m tcsim.hw.probes > tcsim/hw/probes.cu"
    )


def test_every_qualifier_has_a_probe_kernel():
    source = (files("tcsim.hw") / "probes.cu").read_text()
    for q in tcsim.supported_qualifiers():
        spec = tcsim.parse(q)
        assert f"void {spec.kernel_name}(" in source
        assert f'"mma.sync.aligned.{q} ' in source


def test_hw_reports_why_it_is_unavailable_or_runs():
    from tcsim import hw

    reason = hw.unavailable_reason()
    assert reason is None or ("CuPy" in reason or "GPU" in reason or "driver" in reason)


def test_smem_probes_cu_is_up_to_date():
    from tcsim.hw.smem_probes import probe_source as smem_source

    committed = (files("tcsim.hw") / "smem_probes.cu").read_text()
    assert committed == smem_source(), (
        "tcsim/hw/smem_probes.cu is stale: run "
        "python -m tcsim.hw.smem_probes > tcsim/hw/smem_probes.cu"
    )
