"""recall_run's hydration (recall_hydrate's read written out, session 8) against recall_hydrate itself.

dm.recall_memory hydrates with its own statement; dm.explain_recall and DBAs call
dm_private.recall_hydrate. Both must refuse exactly the same rows: here the search
mirror still says every candidate is recallable while the authoritative rows say
otherwise, one reason per candidate (state, policy label without the scope, valid
time, known time, a source revision that is no longer current, an inactive owner).
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from test_recall_support import embed, explain, ingest, make_team, recall, result_ids, unit

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]
NOW = "2026-06-01T00:00:00Z"


def _hydrated(conn: Conn, team: uuid.UUID, ids: list[uuid.UUID], scopes: tuple[str, ...]) -> set[uuid.UUID]:
    request = {"limit": 50, "now": NOW}
    with acting_as(conn, Principal(team, None, scopes)) as cur:
        cur.execute("SELECT dm_private.recall_settings(%s, NULL) AS s", (team,))
        settings = cur.fetchone()
        assert settings is not None
        cur.execute(
            "SELECT dm_private.recall_request('q', %s, %s) AS r", (Jsonb(request), Jsonb(settings["s"]))
        )
        req = cur.fetchone()
        assert req is not None
        cur.execute(
            "SELECT h.evidence_id FROM dm_private.recall_hydrate(%s, %s::uuid[], %s) AS h",
            (team, ids, Jsonb(req["r"])),
        )
        return {row["evidence_id"] for row in cur.fetchall()}


def test_recall_hydration_refuses_what_recall_hydrate_refuses(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "hydration-inline")
    other_owner = admin_conn.execute(
        "INSERT INTO dm_private.profiles (team_id, profile_id, name) "
        "VALUES (%s, gen_random_uuid(), 'second owner') RETURNING profile_id",
        (team,),
    ).fetchone()
    assert other_owner is not None
    ids = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": f"Ticket {i}: the invoice export stalls on retry. " + "note " * (2 + i % 7)}
            for i in range(16)
        ],
    )
    for i, evidence in enumerate(ids):
        embed(admin_conn, team, evidence, unit((i % 4, 1.0), (40 + i, 0.3)))
    query, vector = "invoice export stalls on retry", unit((1, 1.0))
    # the authoritative rows change behind the mirror (search_documents untouched)
    quarantined, labelled, expired, unknown, stale_revision, inactive_owner = (
        ids[1],
        ids[2],
        ids[4],
        ids[5],
        ids[7],
        ids[8],
    )
    admin_conn.execute(
        "UPDATE dm_private.evidence SET state = 'quarantined' WHERE evidence_id = %s", (quarantined,)
    )
    admin_conn.execute(
        "UPDATE dm_private.evidence SET labels = '{\"pii\": true}' WHERE evidence_id = %s", (labelled,)
    )
    admin_conn.execute(
        "UPDATE dm_private.evidence SET valid_to = '2026-01-01T00:00:00Z' WHERE evidence_id = %s", (expired,)
    )
    admin_conn.execute(
        "UPDATE dm_private.evidence SET known_from = now() + interval '1 day' WHERE evidence_id = %s",
        (unknown,),
    )
    admin_conn.execute(
        "UPDATE dm_private.source_revisions AS r SET is_current = false FROM dm_private.evidence AS e "
        "WHERE e.evidence_id = %s AND r.team_id = e.team_id AND r.source_id = e.source_id "
        "AND r.revision_id = e.revision_id",
        (stale_revision,),
    )
    admin_conn.execute(
        "UPDATE dm_private.evidence SET owner_profile_id = %s WHERE evidence_id = %s",
        (other_owner[0], inactive_owner),
    )
    admin_conn.execute(
        "UPDATE dm_private.profiles SET state = 'disabled' WHERE profile_id = %s", (other_owner[0],)
    )
    refused = {quarantined, labelled, expired, unknown, stale_revision, inactive_owner}
    for scopes in ((), ("pii",)):
        kept_by_function = _hydrated(admin_conn, team, ids, scopes)
        expected_refused = refused - ({labelled} if scopes else set())
        assert kept_by_function == set(ids) - expected_refused, scopes
        for limit in (1, 4, 10, 16):
            for budget in (80, 400, 100000):
                request = {"limit": limit, "max_context_bytes": budget, "now": NOW}
                answer = recall(admin_conn, team, query, embedding=vector, request=request, scopes=scopes)
                explained = explain(admin_conn, team, query, embedding=vector, request=request, scopes=scopes)
                assert explained["answer"] == answer, (scopes, limit, budget)
                returned = set(result_ids(answer))
                assert returned <= kept_by_function, (scopes, limit, budget)
                if limit == 16 and budget == 100000:
                    # everything the function keeps (the candidates are all 16) is returned
                    assert returned == kept_by_function & {
                        uuid.UUID(str(r["evidence_id"])) for r in explained["mmr"]
                    }
    admin_conn.rollback()
