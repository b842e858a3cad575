"""Every branch hit carries the heap address of its document's row (session 17, migration 0094).

The ranking fetches a fused candidate's document at the address (ctid) where its branch read it, by a
Tid Scan, instead of probing the document-id hash index. So each hit of each branch, on every path of
every branch, must carry an address (never NULL), and it must be where its document's current row is:
here each returned hit's address is compared with the ctid of its search document.

Paths exercised (sql/35, sql/36, sql/40):
- full-text: a small team (read through its btree range) with up to 8 and up to 24 scored lexemes;
  a large team (a scan budget of 5) with the any-term pass alone (up to 4 and up to 8 lexemes), with
  the all-terms pass, with the dense walk (dense_factor 0) and with more than 8 lexemes; each on a
  team without source groups and on a team of conversation turns with exchange context (radius 0
  and 2);
- vector: the exact path's short prefix (unfiltered), its 4 x cap prefix (filtered), its
  eligible-first statement (a small time window); the HNSW path through the team's walk function
  (dm.refresh_vector_indexes), its eligible-first statement (a selective filter) and, with the walk
  function dropped, the static 384-dimension statement;
- exact: phrases, anchors, both.
"""

from __future__ import annotations

import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from test_recall_support import embed, ingest, make_team

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]

START = datetime(2025, 3, 1, tzinfo=UTC)
TYPES = ["conversation", "workflow", "episodic", "semantic", "organizational"]

SETTINGS_CTE = """
WITH s AS (SELECT dm_private.recall_settings(%(t)s, NULL) AS s),
     v AS (SELECT s.s || jsonb_build_object('fulltext', (s.s -> 'fulltext') || %(fulltext)s::jsonb) AS s
           FROM s),
     r AS (SELECT dm_private.recall_request(%(query)s, %(request)s::jsonb, v.s) AS r FROM v)
"""

FULLTEXT_SQL = (
    SETTINGS_CTE
    + """SELECT h.document_id, h.row_tid::text AS address
FROM v, r, dm_private.recall_fulltext_candidates(%(t)s, %(query)s, r.r, v.s) AS h"""
)

EXACT_SQL = (
    SETTINGS_CTE
    + """SELECT h.document_id, h.row_tid::text AS address
FROM v, r, dm_private.recall_exact_candidates(%(t)s, r.r, v.s) AS h"""
)

VECTOR_SQL = (
    SETTINGS_CTE
    + """SELECT h.document_id, h.row_tid::text AS address
FROM v, r, pg_catalog.unnest(dm_private.recall_vector_hits(%(t)s, %(q)s::vector, r.r, v.s, %(path)s)) AS h"""
)

# where each document's row is now
FRESH_SQL = """
SELECT d.document_id, d.ctid::text AS address
FROM dm_private.search_documents AS d
WHERE d.document_id = ANY (%s::uuid[])
"""


def _hits(conn: Conn, team: uuid.UUID, sql: str, **params: Any) -> list[tuple[uuid.UUID, str | None]]:
    args = {
        "t": team,
        "query": "",
        "request": Jsonb({}),
        "fulltext": Jsonb({}),
        "q": None,
        "path": None,
    }
    args.update(params)
    with acting_as(conn, Principal(team)) as cur:
        cur.execute(sql, args)
        return [(uuid.UUID(str(r["document_id"])), r["address"]) for r in cur.fetchall()]


def _assert_carried(conn: Conn, hits: list[tuple[uuid.UUID, str | None]], case: str) -> None:
    assert hits, f"{case}: no hits (the case exercises nothing)"
    assert all(address is not None for _, address in hits), f"{case}: a hit without an address"
    fresh = dict(conn.execute(FRESH_SQL, ([d for d, _ in hits],)).fetchall())
    for document, address in hits:
        assert address == fresh[document], (
            f"{case}: {document} carries {address}, its row is at {fresh[document]}"
        )


def _text_team(conn: Conn, name: str, grouped: bool) -> uuid.UUID:
    """60 evidence documents: 'alpha' in all, 'beta' in every second, 'gamma' in every third and one of
    15 markers each (4 documents per marker); varied types, importance, confidence, creation times;
    with grouped, conversation turns in three source groups (sequence numbers in write order)."""
    team, profile = make_team(conn, name)
    items = []
    for i in range(60):
        words = ["alpha"] + (["beta"] if i % 2 == 0 else []) + (["gamma"] if i % 3 == 0 else [])
        source: dict[str, Any] = {
            "external_id": f"{name}-{i}",
            "kind": "conversation_turn" if grouped else "note",
        }
        if grouped:
            source["source_group"] = f"session-{i % 3}"
        items.append(
            {
                "text": " ".join(words) + f" marker{i % 15} entry number {i}.",
                "memory_type": TYPES[i % 5],
                "importance": round((i % 10) / 10, 1),
                "confidence": round(1 - (i % 4) / 10, 1),
                "created_at": (START + timedelta(hours=i)).isoformat(),
                "source": source,
            }
        )
    ingest(conn, team, profile, items)
    conn.execute("ANALYZE dm_private.search_documents")
    return team


MARKERS = [f"marker{i}" for i in range(1, 12)]
QUERIES = [
    "alpha beta",
    "alpha or beta",
    "alpha -beta",
    '"alpha beta"',
    "marker3 marker4",
    " ".join(MARKERS[:6]),
    "alpha beta gamma " + " ".join(MARKERS[:8]),
    " or ".join(["alpha", *MARKERS[:10]]),
]
FULLTEXT_SETTINGS: dict[str, dict[str, Any]] = {
    "small team": {},
    "large team": {"scan_budget": 5},
    "large team, dense walk": {"scan_budget": 5, "dense_factor": 0},
}


def test_fulltext_hits_carry_their_documents_addresses_on_every_path(admin_conn: Conn) -> None:
    for grouped in (False, True):
        team = _text_team(admin_conn, f"features-text-{grouped}", grouped)
        for label, settings in FULLTEXT_SETTINGS.items():
            for radius in (0, 2) if grouped else (0,):
                for query in QUERIES:
                    case = f"grouped={grouped} {label} radius={radius} {query!r}"
                    hits = _hits(
                        admin_conn,
                        team,
                        FULLTEXT_SQL,
                        query=query,
                        fulltext=Jsonb({**settings, "context_radius": radius}),
                    )
                    _assert_carried(admin_conn, hits, case)


def test_exact_hits_carry_their_documents_addresses(admin_conn: Conn) -> None:
    team = _text_team(admin_conn, "features-exact", False)
    for request in (
        {"phrases": ["alpha beta"]},
        {"anchors": ["marker3"]},
        {"anchors": ["marker3"], "phrases": ["gamma", "beta"]},
        {"phrases": ["entry number"], "filters": {"memory_type": ["episodic"]}},
    ):
        hits = _hits(admin_conn, team, EXACT_SQL, query="alpha", request=Jsonb(request))
        _assert_carried(admin_conn, hits, json.dumps(request))


def _unit(rng: random.Random) -> list[float]:
    v = [rng.gauss(0.0, 1.0) for _ in range(384)]
    norm = sum(x * x for x in v) ** 0.5
    return [x / norm for x in v]


def test_vector_hits_carry_their_documents_addresses_on_every_path(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "features-vector")
    ids = ingest(
        admin_conn,
        team,
        profile,
        [
            {
                "text": f"Observation {i}.",
                "memory_type": TYPES[i % 5],
                "importance": round((i % 10) / 10, 1),
                "created_at": (START + timedelta(hours=i)).isoformat(),
                "source": {"external_id": f"v{i}", "kind": "doc", "source_group": f"g{i % 4}"},
            }
            for i in range(300)
        ],
    )
    rng = random.Random(17)
    for evidence in ids:
        embed(admin_conn, team, evidence, _unit(rng))
    admin_conn.execute("ANALYZE dm_private.document_embeddings")
    admin_conn.execute("ANALYZE dm_private.search_documents")
    q = json.dumps(_unit(rng))
    window = {
        "time_window": {
            "from": (START + timedelta(hours=20)).isoformat(),
            "to": (START + timedelta(hours=70)).isoformat(),
        }
    }
    exact_cases: dict[str, dict[str, Any]] = {
        "exact, short prefix": {},
        "exact, 4 x cap prefix": {"filters": {"memory_type": ["episodic", "semantic"]}},
        "exact, small window (eligible first)": window,
    }
    for name, request in exact_cases.items():
        hits = _hits(admin_conn, team, VECTOR_SQL, q=q, request=Jsonb(request))
        _assert_carried(admin_conn, hits, name)

    built = admin_conn.execute("SELECT team_id, index_name FROM dm.refresh_vector_indexes(200)").fetchall()
    assert [uuid.UUID(str(r[0])) for r in built] == [team]
    walk = f"{built[0][1]}_walk"
    admin_conn.execute("ANALYZE dm_private.document_embeddings")
    hnsw_cases: dict[str, tuple[dict[str, Any], str | None]] = {
        "hnsw walk": ({}, None),
        "hnsw walk, filtered": ({"filters": {"source_group": "g1"}}, "hnsw_partial"),
        "hnsw, eligible first": ({"filters": {"memory_type": ["workflow"]}}, None),
        "forced exact": ({}, "exact"),
    }
    for name, (request, path) in hnsw_cases.items():
        hits = _hits(admin_conn, team, VECTOR_SQL, q=q, request=Jsonb(request), path=path)
        _assert_carried(admin_conn, hits, name)
    # without its walk function the team's HNSW statement is the static 384-dimension one
    admin_conn.execute(
        f"DROP FUNCTION dm_private.{walk}(halfvec, integer, timestamptz, timestamptz, text[], text[], "
        "text[], timestamptz, timestamptz, boolean, timestamptz, timestamptz, uuid[], uuid[])"
    )
    hits = _hits(admin_conn, team, VECTOR_SQL, q=q, request=Jsonb({}))
    _assert_carried(admin_conn, hits, "hnsw, static statement")
    # recall_vector_sql's statements (what EXECUTE runs for a contract of other dimensions, and what
    # an operator EXPLAINs), both access paths
    for access_path in ("hnsw_partial", "exact"):
        hits = _vector_sql_hits(admin_conn, team, q, access_path)
        _assert_carried(admin_conn, hits, access_path + " text")


def _vector_sql_hits(
    conn: Conn, team: uuid.UUID, q: str, access_path: str
) -> list[tuple[uuid.UUID, str | None]]:
    row = conn.execute(
        "SELECT dm_private.recall_vector_sql(%s, c.contract_id, c.dimensions, %s) "
        "FROM dm_private.embedding_contracts AS c WHERE c.is_active",
        (team, access_path),
    ).fetchone()
    assert row is not None
    # a temporary SQL function of the statement: its $1 .. $15 are the function's arguments
    conn.execute(
        "CREATE OR REPLACE FUNCTION pg_temp.vector_branch(halfvec, integer, timestamptz, timestamptz, "
        "text[], text[], text[], timestamptz, timestamptz, boolean, timestamptz, timestamptz, "
        "uuid[], uuid[], bigint) "
        "RETURNS TABLE (branch text, document_id uuid, evidence_id uuid, branch_rank integer, "
        "branch_score double precision, row_tid tid) "
        "LANGUAGE sql STABLE AS $statement$" + row[0] + "$statement$"
    )
    rows = conn.execute(
        "SELECT h.document_id, h.row_tid::text "
        "FROM pg_temp.vector_branch(%s::vector::halfvec, 100, now(), now(), "
        "'{}', NULL, NULL, NULL, NULL, false, NULL, NULL, '{}', '{}', NULL) AS h",
        (q,),
    ).fetchall()
    return [(uuid.UUID(str(r[0])), r[1]) for r in rows]
