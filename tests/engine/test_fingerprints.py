"""The facility models compute exactly what they computed before, for the same seed, on each
kernel (``SIMSTACK_KERNEL``): the native one and the SimPy reference.

Engine changes (dispatch, record buffers, parallel replications) must not move a single bit
of the results. A mismatch means either a bug or an intended change of the random streams or
of a model file; in the latter case regenerate with ``python -m simstack.testing.fingerprints --update``
and say why in the commit.
"""

from __future__ import annotations

import pytest

from simstack.engine import kernel, native
from simstack.testing.fingerprints import digest, load, runs, tables

KNOWN = load()


@pytest.mark.parametrize("which", ["native", "simpy"])
@pytest.mark.parametrize("name", sorted(KNOWN))
def test_model_fingerprint_unchanged(name: str, which: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if which == "native" and (native.MISSING or kernel.unusable()):
        pytest.skip("native kernel not built here")
    monkeypatch.setenv(kernel.ENV, "" if which == "native" else "simpy")
    result = runs()[name]()
    assert result.kernel == "native" if which == "native" else result.kernel.startswith("SimPy ("), result.kernel
    assert digest(tables(result)) == KNOWN[name], (
        f"{name}: summary tables differ from tests/data/fingerprints.json for the same seed ({result.kernel})")


def test_every_model_has_a_fingerprint() -> None:
    assert set(runs()) == set(KNOWN)
