"""One setting for the local model's threads: DENSEMEM_EMBEDDING_THREADS (DENSEMEM_TORCH_THREADS is a
deprecated alias that `densemem serve` read before the two were merged)."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

from densemem.config import embedding_threads, load_settings
from densemem.embeddings import provider_from_settings


def test_the_default_is_one_thread() -> None:
    assert embedding_threads({}) == 1
    assert embedding_threads({"DENSEMEM_EMBEDDING_THREADS": ""}) == 1


def test_the_documented_name() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation warning for the documented name
        assert embedding_threads({"DENSEMEM_EMBEDDING_THREADS": "2"}) == 2


def test_the_deprecated_alias_still_works_and_warns() -> None:
    with pytest.warns(DeprecationWarning, match="DENSEMEM_EMBEDDING_THREADS"):
        assert embedding_threads({"DENSEMEM_TORCH_THREADS": "3"}) == 3


def test_the_documented_name_wins_over_the_alias() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        both = {"DENSEMEM_EMBEDDING_THREADS": "2", "DENSEMEM_TORCH_THREADS": "4"}
        assert embedding_threads(both) == 2


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5"])
def test_invalid_values_are_refused_with_the_name(raw: str) -> None:
    with pytest.raises(ValueError, match="DENSEMEM_EMBEDDING_THREADS"):
        embedding_threads({"DENSEMEM_EMBEDDING_THREADS": raw})


def test_the_local_provider_and_serve_read_the_same_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """provider_from_settings passes it to the local provider; `densemem serve` sets torch from it."""
    torch = pytest.importorskip("torch")
    from densemem.serve_command import limit_torch_threads

    settings = dataclasses.replace(load_settings(), embedding_provider="local")
    provider = provider_from_settings(settings, {"DENSEMEM_EMBEDDING_THREADS": "2"})
    assert provider._num_threads == 2  # type: ignore[attr-defined]
    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("DENSEMEM_EMBEDDING_THREADS", "2")
        monkeypatch.delenv("DENSEMEM_TORCH_THREADS", raising=False)
        limit_torch_threads()
        assert torch.get_num_threads() == 2
        monkeypatch.delenv("DENSEMEM_EMBEDDING_THREADS")
        limit_torch_threads()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
