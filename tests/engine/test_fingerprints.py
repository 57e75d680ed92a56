"""The facility models compute exactly what they computed before, for the same seed.

Engine changes (dispatch, record buffers, parallel replications) must not move a single bit
of the results. A mismatch means either a bug or an intended change of the random streams or
of a model file; in the latter case regenerate with ``python -m simstack.testing.fingerprints --update``
and say why in the commit.
"""

from __future__ import annotations

import pytest

from simstack.testing.fingerprints import compute, load

KNOWN = load()


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_model_fingerprint_unchanged(name: str) -> None:
    assert compute([name])[name] == KNOWN[name], (
        f"{name}: summary tables differ from tests/data/fingerprints.json for the same seed")


def test_every_model_has_a_fingerprint() -> None:
    from simstack.testing.fingerprints import _runs
    assert set(_runs()) == set(KNOWN)
