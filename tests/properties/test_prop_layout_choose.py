"""Junk into this session's public entry points: `tcsim.Layout` (CuTe's shape:stride) and
`tcsim.choose_tile`. Each either works or raises the TypeError / ValueError (ProblemSizeError
is one) that docs/errors.md lists, never another exception."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tcsim

junk = st.one_of(st.integers(-3, 40), st.floats(allow_nan=True), st.text(max_size=2),
                 st.none(), st.booleans())
modes = st.recursive(junk, lambda inner: st.lists(inner, min_size=0, max_size=3).map(tuple),
                     max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(shape=modes, stride=st.one_of(st.none(), modes))
def test_a_layout_is_built_or_refused_with_a_documented_error(shape, stride):
    try:
        layout = tcsim.Layout(shape) if stride is None else tcsim.Layout(shape, stride)
    except (TypeError, ValueError):
        return
    # built: every index lands inside its codomain, as numpy's arithmetic on the modes says
    offsets = np.array([layout(i) for i in range(min(layout.size, 64))])
    assert offsets.size == 0 or (0 <= offsets.min() and offsets.max() < max(layout.cosize, 1))


@settings(max_examples=60, deadline=None)
@given(M=junk, N=junk, K=junk,
       candidates=st.one_of(st.none(), junk, st.dictionaries(
           st.text(max_size=3), st.one_of(junk, st.dictionaries(
               st.sampled_from(["block_m", "block_n", "stages", "nope"]), junk, max_size=2)),
           max_size=2)))
def test_choose_tile_chooses_or_refuses_with_a_documented_error(M, N, K, candidates):
    try:
        choice = tcsim.choose_tile("kernel10", M, N, K, candidates=candidates)
    except (TypeError, ValueError) as error:  # ProblemSizeError, MissingRateError included
        assert str(error)
        return
    assert choice.label in choice.explanations and choice.explanation.seconds > 0
