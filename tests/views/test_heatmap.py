import pytest

import tcsim.memory
from tcsim.memory import access
from tcsim.views import heatmap_text

PLAIN = [128 * r for r in range(32)]
SWIZZLED = [128 * r + 16 * (r % 8) for r in range(32)]


def test_text_heatmap_shows_the_conflicting_banks():
    text = heatmap_text(access("ldmatrix.sync.aligned.m8n8.x2.shared.b16", PLAIN))
    lines = text.splitlines()
    assert "16 wavefronts" in lines[0]
    # two phases; banks 0-3 hold 8 words each, the rest none
    assert lines[2].split()[1:6] == ["8", "8", "8", "8", "."] and lines[2].split()[-1] == "8"
    assert len(lines) == 4


def test_figure_draws_words_per_phase_and_bank():
    pytest.importorskip("matplotlib", reason="heatmap_figure needs the optional docs extra")
    import matplotlib

    matplotlib.use("Agg")
    from tcsim.views import heatmap_figure

    fig = heatmap_figure(access("ldmatrix.sync.aligned.m8n8.x4.shared.b16", SWIZZLED))
    image = fig.axes[0].images[0].get_array()
    assert image.shape == (4, 32) and image.max() == 1


@pytest.mark.parametrize("name", ["heatmap_text", "heatmap_figure"])
def test_the_old_memory_names_forward_with_a_warning(name):
    with pytest.warns(DeprecationWarning, match=f"tcsim.memory.{name} moved to tcsim.views"):
        old = getattr(tcsim.memory, name)
    assert old is getattr(tcsim.views, name)
    assert name not in tcsim.memory.__all__  # a star import does not warn
    with pytest.raises(AttributeError, match="no attribute 'heatmap_svg'"):
        tcsim.memory.heatmap_svg  # noqa: B018
