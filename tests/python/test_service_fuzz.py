"""Fuzzing every endpoint from the OpenAPI document (schemathesis 4 + hypothesis), through a real uvicorn.

The document is the one the server serves at /openapi.json. For each
operation, schemathesis generates requests that fit the schema (positive)
and requests that do not (negative: wrong types, missing fields, bad UUIDs,
out-of-range numbers), sent with a valid operator key. Every answer must be
below 500, carry no traceback, answer errors in the one error shape, and
(for positive cases) conform to the documented status codes, content types
and response schemas.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from service_support import FakeHashingEmbedder, assert_error_body, fresh_database, issue, service

from densemem.service.openapi import openapi_document

DOCUMENT = openapi_document()
SCHEMA = schemathesis.openapi.from_dict(DOCUMENT)
# Negative cases need something to break: a parameter or a body.
CASES = [
    (path, method, mode)
    for path, item in DOCUMENT["paths"].items()
    for method, operation in item.items()
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if mode is GenerationMode.POSITIVE or operation.get("parameters") or operation.get("requestBody")
]
MAX_EXAMPLES = 25


@pytest.fixture(scope="module")
def target(admin_url: str, template_url: str) -> Iterator[tuple[str, dict[str, str]]]:
    with fresh_database(admin_url) as url, service(url, FakeHashingEmbedder()) as base_url:
        key = issue(url, "fuzz-team", "fuzzer", ["operator", "pii"]).api_key
        yield base_url, {"Authorization": f"Bearer {key}"}


def test_served_document_is_the_generated_one(target: tuple[str, dict[str, str]]) -> None:
    base_url, _ = target
    assert httpx.get(base_url + "/openapi.json").json() == json.loads(json.dumps(DOCUMENT))


def _check(case: Any, response: Any, mode: GenerationMode) -> None:
    text = response.text
    assert response.status_code < 500, (case.method, case.formatted_path, response.status_code, text[:500])
    assert "Traceback" not in text and 'File "' not in text, text[:500]
    if response.status_code >= 400:
        content_type = response.headers.get("content-type", [""])  # schemathesis: name -> list of values
        assert content_type[0].startswith("application/json"), text[:200]
        assert_error_body(response.json())
    checks = [not_a_server_error]
    if mode is GenerationMode.POSITIVE:
        checks += [status_code_conformance, content_type_conformance, response_schema_conformance]
    case.validate_response(response, checks=checks)


@pytest.mark.parametrize(("path", "method", "mode"), CASES, ids=[f"{m.upper()} {p} {g}" for p, m, g in CASES])
def test_fuzz_operation(
    target: tuple[str, dict[str, str]], path: str, method: str, mode: GenerationMode
) -> None:
    base_url, auth = target
    operation = SCHEMA[path][method.upper()]
    strategy = operation.as_strategy(generation_mode=mode)

    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        database=None,
        phases=[Phase.explicit, Phase.generate],  # bounded: no shrinking on this shared 2-core machine
    )
    @given(case=strategy, with_auth=st.booleans() if mode is GenerationMode.NEGATIVE else st.just(True))
    def run(case: Any, with_auth: bool) -> None:
        # replace whatever Authorization schemathesis generated from the security scheme
        case.headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
        if with_auth:
            case.headers.update(auth)
        response = case.call(base_url=base_url, timeout=60)
        _check(case, response, mode)

    run()
