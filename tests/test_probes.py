"""The generated mma.sync probe source holds a probe kernel for every qualifier."""

import tcsim
from tcsim.hw.isa.mma_probes import probe_name, probe_source


def test_every_qualifier_has_a_probe_kernel():
    source = probe_source()
    for q in tcsim.supported_qualifiers():
        spec = tcsim.parse(q)
        assert f"void {probe_name(spec)}(" in source
        assert f'"mma.sync.aligned.{q} ' in source


def test_hw_reports_why_it_is_unavailable_or_runs():
    from tcsim import hw

    reason = hw.unavailable_reason()
    assert reason is None or ("CuPy" in reason or "GPU" in reason or "driver" in reason)

