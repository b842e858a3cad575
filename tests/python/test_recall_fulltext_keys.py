"""The keyed all-terms pass looks up only the keys worth their posting lists (session 10).

`dm_private.recall_fulltext_candidates` gives the keyed all-terms pass a prefix of the query's
lexeme keys, rarest first, chosen by `fulltext.key_factor`: `@@ all_q` decides which documents
match, so any subset of the keys selects a superset of the matches, in the same heap order, and
the pass's LIMIT keeps the same rows. This test holds the branch's output equal whichever keys
are chosen (the rarest alone, every key, the default factor), with every pass cut by a tiny scan
budget. What the choice saves is measured in docs/RECALL.md (full-text branch, session 10).
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from test_recall_support import explain, ingest, make_team

Conn = psycopg.Connection[Any]

# key_factor 0: the rarest key alone; 1e12: every key (the branch before session 10)
PROFILES = (("keys-rarest", "0"), ("keys-all", "1e12"), ("keys-default", None))


def make_profiles(conn: Conn) -> None:
    for name, factor in PROFILES:
        settings = (
            "jsonb_set(jsonb_set(settings, '{fulltext,scan_budget}', '5'), '{fulltext,dense_factor}', '1e12')"
        )
        if factor is not None:
            settings = f"jsonb_set({settings}, '{{fulltext,key_factor}}', '{factor}')"
        conn.execute(
            "INSERT INTO dm_private.ranking_profiles (name, version, settings) "
            f"SELECT %s, 1, {settings} FROM dm_private.ranking_profiles WHERE is_default",
            (name,),
        )


def hits(conn: Conn, team: uuid.UUID, query: str, request: dict[str, Any]) -> list[Any]:
    explained = explain(conn, team, query, request=request)
    return [
        (h["evidence_id"], h["branch_rank"], h["branch_score"]) for h in explained["branches"]["fulltext"]
    ]


def corpus() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for i in range(60):
        # "invoice" and "campaign" in most documents, "spring" in 12, "late" in 40
        season = "spring" if i % 5 == 0 else "summer"
        items.append({"text": f"Invoice {i} for the {season} campaign, paid {'late' if i % 3 else 'early'}."})
        if i % 6 == 0:
            items.append({"text": f"Spring cleaning notes {i}, no invoice."})
    return items


QUERIES = (
    "spring invoice campaign",  # rarest (spring, 22 documents) over the budget of 5: both passes run
    "spring campaign late invoice",
    '"spring campaign" invoice',  # a phrase: @@ decides on the adjacency
    "invoice campaign",  # common lexemes only
    "spring",  # one lexeme: the all-terms pass alone, one key
    "spring invoice nosuchword",  # a lexeme no document holds: no all-terms match at all
)


def test_the_chosen_keys_never_change_the_candidates(admin_conn: Conn) -> None:
    make_profiles(admin_conn)
    team, profile = make_team(admin_conn, "fulltext keys")
    ingest(admin_conn, team, profile, corpus())
    for query in QUERIES:
        rarest = hits(admin_conn, team, query, {"ranking_profile": "keys-rarest"})
        every = hits(admin_conn, team, query, {"ranking_profile": "keys-all"})
        default = hits(admin_conn, team, query, {"ranking_profile": "keys-default"})
        if "nosuchword" not in query:
            assert rarest, query
        assert rarest == every == default, query
        assert len(rarest) <= 2 * 5, query
    # with eligibility filters and known ids on top
    known = [
        h[0] for h in hits(admin_conn, team, "spring invoice campaign", {"ranking_profile": "keys-all"})[:3]
    ]
    request: dict[str, Any] = {"known_evidence_ids": known, "filters": {"memory_type": "semantic"}}
    rarest = hits(admin_conn, team, "spring invoice campaign", {**request, "ranking_profile": "keys-rarest"})
    every = hits(admin_conn, team, "spring invoice campaign", {**request, "ranking_profile": "keys-all"})
    assert rarest
    assert rarest == every
    assert not set(known) & {h[0] for h in rarest}
