"""The OpenAPI 3.1 document, generated from the operation table and the request models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from densemem import __version__
from densemem.service.routes import OPERATIONS

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["code", "message", "details", "hint"],
    "properties": {
        "code": {"type": "string", "description": "SQLSTATE, or the SQLSTATE the database would use."},
        "message": {"type": "string"},
        "details": {"description": "null, a string (database detail) or a list of {field, message}."},
        "hint": {"type": ["string", "null"]},
    },
}

ERROR_STATUSES: dict[str, str] = {
    "400": "The request was refused.",
    "401": "Missing, invalid or revoked API key.",
    "403": "The key lacks a scope, or the team does not match.",
    "404": "No such row in this team (another team's ID answers the same).",
    "409": "Conflict: duplicate or illegal lifecycle move.",
    "413": "Request body, query string or batch too large.",
    "415": "The body must be application/json.",
    "422": "The request does not match the schema or the contract.",
    "503": "A dependency is unavailable (database, required query embedding) or the statement timed out.",
}


def _schemas(models: list[type[BaseModel]]) -> dict[str, Any]:
    components: dict[str, Any] = {}
    for model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in schema.pop("$defs", {}).items():
            components[name] = definition
        components[model.__name__] = schema
    return components


def openapi_document() -> dict[str, Any]:
    models = [op.request_model for op in OPERATIONS if op.request_model is not None]
    schemas = _schemas(models)
    schemas["Error"] = ERROR_SCHEMA
    error_responses = {
        status: {
            "description": text,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
        for status, text in ERROR_STATUSES.items()
    }
    paths: dict[str, Any] = {}
    for op in OPERATIONS:
        success: dict[str, Any] = {"description": "Success."}
        if op.response_schema is not None:
            success["content"] = {"application/json": {"schema": op.response_schema}}
        operation: dict[str, Any] = {
            "operationId": op.operation_id,
            "summary": op.summary,
            "tags": [op.tag],
            "security": [{"apiKey": []}],
            "responses": {str(op.success_status): success, **error_responses},
        }
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}
            for name in op.path_params
        ]
        parameters += [
            {"name": name, "in": "query", "required": False, "schema": schema}
            for name, schema in op.query_params
        ]
        if parameters:
            operation["parameters"] = parameters
        if op.request_model is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {"$ref": f"#/components/schemas/{op.request_model.__name__}"}
                    }
                },
            }
        paths.setdefault(op.path, {})[op.method.lower()] = operation
    text = {"200": {"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}}}
    status_schema = {"type": "object", "properties": {"status": {"type": "string"}}}
    paths["/healthz"] = {
        "get": {
            "operationId": "healthz",
            "summary": "The process is up.",
            "tags": ["operations"],
            "security": [],
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {"schema": status_schema}}}
            },
        }
    }
    paths["/readyz"] = {
        "get": {
            "operationId": "readyz",
            "summary": "The database and the embedding provider answer.",
            "tags": ["operations"],
            "security": [],
            "responses": {
                "200": {"description": "Ready.", "content": {"application/json": {"schema": status_schema}}},
                "503": error_responses["503"],
            },
        }
    }
    paths["/metrics"] = {
        "get": {
            "operationId": "metrics",
            "summary": "Prometheus text exposition.",
            "tags": ["operations"],
            "security": [],
            "responses": text,
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Dense-Mem",
            "version": __version__,
            "description": "Long-term memory for AI agents, built inside PostgreSQL. "
            "Authenticate with `Authorization: Bearer <api key>` (`densemem keys create`).",
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer"}},
        },
    }
