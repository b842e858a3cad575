"""EXPLAIN checks, run as the application role: the full-text branch uses its GIN index, the vector
branch scans a small team exactly and a large team through its own partial HNSW index."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import psycopg
from test_recall_support import make_team, unit

Conn = psycopg.Connection[Any]

BULK_SQL = """
INSERT INTO dm_private.sources (team_id, source_id, external_id, kind)
VALUES (%(team)s, md5(%(team)s::text || 'src')::uuid, 'bulk', 'doc');
INSERT INTO dm_private.source_revisions (team_id, source_id, revision_id, revision_label,
    revision_number, is_current)
VALUES (%(team)s, md5(%(team)s::text || 'src')::uuid, md5(%(team)s::text || 'rev')::uuid, 'v1', 1, true);
INSERT INTO dm_private.evidence (team_id, evidence_id, source_id, revision_id, owner_profile_id, text,
    content_hash)
SELECT %(team)s, md5(%(team)s::text || i)::uuid, md5(%(team)s::text || 'src')::uuid,
       md5(%(team)s::text || 'rev')::uuid, %(profile)s, t.text, sha256(convert_to(t.text, 'UTF8'))
FROM generate_series(1, %(n)s) AS i
CROSS JOIN LATERAL (SELECT 'Record ' || i || ' mentions ' || (ARRAY['alpha', 'bravo', 'charlie',
    'delta', 'echo',
        'foxtrot', 'golf', 'hotel'])[1 + i %% 8] || ' and ' || md5(i::text) AS text) AS t;
SELECT dm_private.sync_evidence_documents(%(team)s,
    ARRAY(SELECT evidence_id FROM dm_private.evidence WHERE team_id = %(team)s));
INSERT INTO dm_private.document_embeddings (team_id, document_id, contract_id, document_version,
    source_version,
                                           embedding)
SELECT d.team_id, d.document_id, 1, d.document_version, d.source_version,
       public.l2_normalize(ARRAY(SELECT random() - 0.5 + 0 * i FROM generate_series(1,
           384))::public.vector)::public.halfvec
FROM dm_private.search_documents AS d
CROSS JOIN LATERAL (SELECT 1 AS i) AS x
WHERE d.team_id = %(team)s;
"""


def bulk_team(conn: Conn, name: str, n: int, *, vectors: bool = True) -> uuid.UUID:
    team, profile = make_team(conn, name)
    for statement in BULK_SQL.split(";\n"):
        if statement.strip() and (vectors or "document_embeddings" not in statement):
            conn.execute(statement, {"team": team, "profile": profile, "n": n})
    return team


def plans_of_recall(conn: Conn, team: uuid.UUID, query: str) -> list[str]:
    """The plans of every statement recall_memory runs, captured with auto_explain, as densemem_app."""
    messages: list[str] = []
    conn.add_notice_handler(lambda d: messages.append(d.message_primary or ""))
    vector = json.dumps(unit((1, 1.0), (2, 0.5)))
    with conn.transaction():
        # six calls first: from the sixth, plpgsql may switch to generic plans, which must be right too
        conn.execute(
            "SELECT set_config('role', 'densemem_app', true), set_config('densemem.team_id', %s, true)",
            (str(team),),
        )
        for _ in range(6):
            conn.execute("SELECT dm.recall_memory(%s, %s, %s::vector)", (query, team, vector))
        conn.execute("RESET ROLE")
        conn.execute("LOAD 'auto_explain'")
        conn.execute("SET LOCAL auto_explain.log_min_duration = 0")
        conn.execute("SET LOCAL auto_explain.log_nested_statements = on")
        conn.execute("SET LOCAL client_min_messages = log")
        conn.execute(
            "SELECT set_config('role', 'densemem_app', true), set_config('densemem.team_id', %s, true)",
            (str(team),),
        )
        conn.execute(
            "SELECT dm.recall_memory(%s, %s, %s::vector)", (query, team, json.dumps(unit((1, 1.0), (2, 0.5))))
        )
    return messages


# the full-text statements' any-term pass (inlined, read once since session 8; after the
# dense walk's CTE since session 14): how a plan of the branch is recognised
ANY_PASS = "any_pass AS NOT MATERIALIZED"


def test_fulltext_branch_uses_its_gin_index_and_vector_path_follows_team_size(admin_conn: Conn) -> None:
    # the other teams' rows make the table large, as in production: a team is a small part of it
    filler = bulk_team(admin_conn, "filler", 20000, vectors=False)
    large = bulk_team(admin_conn, "large", 3000)
    small = bulk_team(admin_conn, "small", 40)
    built = admin_conn.execute("SELECT team_id, index_name FROM dm.refresh_vector_indexes(1000)").fetchall()
    assert [uuid.UUID(str(r[0])) for r in built] == [large]
    index_name = str(built[0][1])
    admin_conn.execute("ANALYZE")

    cases = (
        (large, "charlie delta"),
        (small, "charlie delta"),
        (small, "charlie or delta"),
        (filler, "record mentions"),
    )
    for team, query in cases:
        plans = plans_of_recall(admin_conn, team, query)
        fulltext = [
            p
            for p in plans
            # the statement text names any_pass (ANY_PASS)
            if ANY_PASS in p or ("team_rows AS MATERIALIZED" in p and "search_vector @@" in p)
        ]
        assert fulltext, "the full-text statement ran"
        # a team of at most scan_budget documents whose all-terms pass cannot use the lexeme keys
        # (an "or", an exclusion) has its own statement (team_rows); any other query, and a larger
        # team, the GIN passes' statement
        if query == "charlie or delta":
            assert all("CTE team_rows" in p and ANY_PASS not in p for p in fulltext), fulltext
        else:
            assert all(ANY_PASS in p and "CTE team_rows" not in p for p in fulltext), fulltext
        # one generic plan serves every team of the session: the any-term pass and the keyed
        # all-terms pass read the team-qualified lexeme keys (migration 0025), the other all-terms
        # pass (an "or", an exclusion) the (team_id, search_vector) GIN index, and the small-team
        # read (team_rows) a range of the team, never the whole table, whatever the estimates (the
        # statement run when the all-terms pass is not needed has the any-term pass alone; this
        # database has three teams, so a generic plan takes a team for a third of the table)
        assert all(
            p.count("Bitmap Index Scan on search_documents_team_lexemes_idx")
            == (2 if "all_pass AS" in p else 1)
            and p.count("Bitmap Index Scan on search_documents_fulltext_idx")
            == (1 if "all_pass AS" in p else 0)
            for p in fulltext
            if ANY_PASS in p
        ), [p[p.index("Limit") :] for p in fulltext]
        # a pass whose lexemes most of a large team holds ("record", "mentions": every document of
        # the 20,000) has its dense way (migration 0053): the team's documents in heap order through
        # search_documents_team_order_idx, never through an index in another order; that statement
        # runs only then. Since session 14 one walk (CTE dense_walk) serves both passes' dense ways:
        # the index is read once, in that CTE, and each pass reads the walk
        dense = [p for p in fulltext if "search_documents_team_order_idx" in p]
        assert bool(dense) == (team == filler), fulltext
        order_scan = " using search_documents_team_order_idx"
        assert all(
            p[p.index("CTE dense_walk") : p.index("CTE all_pass")].count(order_scan) == 1
            and p.count(" on search_documents_team_order_idx") + p.count(order_scan) == 1
            and p[p.index("CTE all_pass") :].count("CTE Scan on dense_walk") == 2
            for p in dense
        ), [p[p.index("Limit") :] for p in dense]
        assert all("Seq Scan on search_documents" not in p for p in fulltext), fulltext
        # no parallel plan: workers return rows in no fixed order, and a pass's LIMIT would pick
        # different documents from call to call
        assert all("Parallel" not in p and "Gather" not in p for p in fulltext), fulltext
        if team == filler:
            continue  # no vectors: the vector access path is checked on the other two teams
        vector = [p for p in plans if "document_embeddings AS e" in p and "OPERATOR(public.<=>)" in p]
        assert vector, "the vector statement ran"
        # one generic plan serves every team of the session: never a scan of every team's vectors
        # (two teams hold vectors here, so a generic estimate takes a team for half the table)
        assert all("Seq Scan on document_embeddings" not in p for p in vector), vector
        if team == large:
            assert any(f"Index Scan using {index_name}" in p for p in vector), [
                p[p.index("(cost") :] for p in vector
            ]
        else:
            assert all("Index Scan using dm_vec_" not in p for p in vector)
            # the primary key of the team's hash partition (migration 0063), one partition only
            assert any(re.search(r"document_embeddings_p\d\d_pkey", p) for p in vector), vector
            assert all(len(set(re.findall(r"document_embeddings_p\d\d", p))) == 1 for p in vector), vector
