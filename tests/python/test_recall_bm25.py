"""BM25 in the full-text branch and the per-team term statistics behind it (migration 0024, sql/34, sql/35).

The statistics must stay exact (equal to a count over search_documents) through the write path,
lifecycle moves, erasure, bulk COPY under session_replication_role = replica, concurrent writers and
compaction; BM25 must put a rare-term match above a common-term one; and one team's documents must
never move another team's statistics or ranking, through any access path.
"""

from __future__ import annotations

import math
import threading
import uuid
from typing import Any

import psycopg
import pytest
from test_recall_support import explain, ingest, make_team

from densemem.store.session import Principal, acting_as

Conn = psycopg.Connection[Any]

TRUTH_SQL = """
SELECT l.lexeme, count(*)::bigint
FROM dm_private.search_documents AS d CROSS JOIN LATERAL unnest(d.search_vector) AS l
WHERE d.team_id = %(team)s AND d.subject_kind = 'evidence' AND d.is_recallable
GROUP BY l.lexeme
"""
TRUTH_TOTALS_SQL = """
SELECT count(*)::bigint, COALESCE(sum(length(d.search_vector)), 0)::bigint
FROM dm_private.search_documents AS d
WHERE d.team_id = %(team)s AND d.subject_kind = 'evidence' AND d.is_recallable
"""
# what the statistics say: compacted rows plus pending deltas, every lexeme of the team
STATS_SQL = """
SELECT u.lexeme, sum(u.n)::bigint
FROM (SELECT s.lexeme, s.document_count AS n FROM dm_private.search_term_statistics AS s
      WHERE s.team_id = %(team)s
      UNION ALL
      SELECT d.lexeme, d.document_delta FROM dm_private.search_statistics_deltas AS d
      WHERE d.team_id = %(team)s AND d.lexeme IS NOT NULL) AS u
GROUP BY u.lexeme
HAVING sum(u.n) <> 0
"""


def assert_exact(conn: Conn, team: uuid.UUID) -> None:
    """The team's statistics equal a fresh count over its recallable evidence documents."""
    truth = dict(conn.execute(TRUTH_SQL, {"team": team}).fetchall())
    stats = dict(conn.execute(STATS_SQL, {"team": team}).fetchall())
    assert stats == truth
    totals = conn.execute(TRUTH_TOTALS_SQL, {"team": team}).fetchone()
    kept = conn.execute("SELECT * FROM dm_private.search_team_totals(%s)", (team,)).fetchone()
    assert kept == totals
    if truth:
        lexemes = sorted(truth)
        counts = dict(
            conn.execute(
                "SELECT * FROM dm_private.search_term_document_counts(%s, %s)",
                (team, [*lexemes, "zzzabsent"]),
            ).fetchall()
        )
        assert counts == {**truth, "zzzabsent": 0}


def compact(conn: Conn, team: uuid.UUID | None = None) -> int:
    """Compaction: of every team as the administrator (None), or of one team as its service."""
    if team is None:
        row = conn.execute("SELECT dm.compact_search_statistics(NULL)").fetchone()
        assert row is not None
        return int(row[0])
    with acting_as(conn, Principal(team)) as cur:
        cur.execute("SELECT dm.compact_search_statistics(%s) AS n", (team,))
        answer = cur.fetchone()
    assert answer is not None
    return int(answer["n"])


def fulltext_hits(
    conn: Conn, team: uuid.UUID, query: str, request: dict[str, Any] | None = None
) -> list[Any]:
    """The full-text branch's (evidence_id, rank, score) as explain_recall reports them."""
    explained = explain(conn, team, query, request=request)
    return [
        (h["evidence_id"], h["branch_rank"], h["branch_score"]) for h in explained["branches"]["fulltext"]
    ]


def document_of(conn: Conn, team: uuid.UUID, evidence: uuid.UUID) -> uuid.UUID:
    row = conn.execute(
        "SELECT document_id FROM dm_private.search_documents WHERE team_id = %s AND subject_id = %s",
        (team, evidence),
    ).fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


# ---------------------------------------------------------------- exactness


def test_statistics_stay_exact_through_writes_moves_erasure_and_compaction(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "alpha")
    other, other_profile = make_team(admin_conn, "beta")
    ids = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "The nightly ETL job failed on the orders table."},
            {"text": "Orders go to the warehouse every night; go live on Monday."},
            {"text": "Grafana shows the queue depth of the orders consumer."},
            {"text": "Go go go: the release train leaves at noon."},
        ],
    )
    ingest(admin_conn, other, other_profile, [{"text": "Orders in the other team never count for alpha."}])
    assert_exact(admin_conn, team)
    assert_exact(admin_conn, other)
    # one aggregated delta per (statement, lexeme): "order" appears in three documents of one ingest
    row = admin_conn.execute(
        "SELECT count(*), sum(document_delta) FROM dm_private.search_statistics_deltas "
        "WHERE team_id = %s AND lexeme = 'order'",
        (team,),
    ).fetchone()
    assert row == (1, 3)

    with acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute("SELECT dm.move_evidence(%s, %s, 'quarantine')", (team, ids[0]))
    assert_exact(admin_conn, team)
    assert compact(admin_conn, None) > 0
    assert admin_conn.execute("SELECT count(*) FROM dm_private.search_statistics_deltas").fetchone() == (0,)
    assert_exact(admin_conn, team)
    assert_exact(admin_conn, other)
    with acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute("SELECT dm.move_evidence(%s, %s, 'release')", (team, ids[0]))
        cur.execute("SELECT dm.erase_evidence(%s, %s)", (team, ids[1]))
    assert_exact(admin_conn, team)
    # a lexeme that only the erased document held disappears from the compacted table
    compact(admin_conn, None)
    assert_exact(admin_conn, team)
    assert admin_conn.execute(
        "SELECT count(*) FROM dm_private.search_term_statistics WHERE team_id = %s AND lexeme = 'warehous'",
        (team,),
    ).fetchone() == (0,)
    # a new revision of a source makes its old evidence non-current: it leaves recall
    ingest(
        admin_conn,
        team,
        profile,
        [{"text": "Revision one of the runbook.", "source": {"external_id": "runbook", "kind": "doc"}}],
    )
    ingest(
        admin_conn,
        team,
        profile,
        [
            {
                "text": "Revision two of the runbook mentions kafka.",
                "source": {"external_id": "runbook", "kind": "doc", "revision": "2"},
            }
        ],
    )
    assert_exact(admin_conn, team)
    # an update that changes nothing the statistics read (the worker's state columns) appends nothing
    before = admin_conn.execute("SELECT count(*) FROM dm_private.search_statistics_deltas").fetchone()
    admin_conn.execute(
        "UPDATE dm_private.search_documents SET search_state = 'ready', pending_since = NULL "
        "WHERE team_id = %s",
        (team,),
    )
    assert admin_conn.execute("SELECT count(*) FROM dm_private.search_statistics_deltas").fetchone() == before
    # a body edit of a recallable document: old lexemes leave, new ones enter
    admin_conn.execute(
        "UPDATE dm_private.search_documents SET body = 'Kafka kafka brokers', "
        "search_vector = to_tsvector('english', 'Kafka kafka brokers') "
        "WHERE team_id = %s AND subject_id = %s",
        (team, ids[2]),
    )
    assert_exact(admin_conn, team)
    # a deleted document leaves too
    admin_conn.execute("DELETE FROM dm_private.document_embeddings WHERE team_id = %s", (team,))
    admin_conn.execute(
        "DELETE FROM dm_private.search_documents WHERE team_id = %s AND subject_id = %s", (team, ids[3])
    )
    assert_exact(admin_conn, team)
    compact(admin_conn, team)
    assert_exact(admin_conn, team)
    assert_exact(admin_conn, other)


def test_bulk_copy_in_replica_mode_counts(admin_conn: Conn) -> None:
    """The bench loader's path: COPY and set-based INSERT with session_replication_role = replica."""
    team, profile = make_team(admin_conn, "bulk")
    admin_conn.execute("SET session_replication_role = replica")
    with (
        admin_conn.cursor() as cur,
        cur.copy(
            "COPY dm_private.search_documents (team_id, document_id, subject_kind, subject_id, body, "
            "search_vector, search_state, pending_since, is_recallable, owner_profile_id) FROM STDIN"
        ) as copy,
    ):
        for i in range(300):
            word = "kafka" if i % 3 == 0 else "grafana"
            vector = f"'bulk':1 'row':2 '{word}':3,5 'word{i % 7}':4"
            copy.write_row(
                (
                    team,
                    uuid.uuid4(),
                    "evidence",
                    uuid.uuid4(),
                    "x",
                    vector,
                    "ready",
                    None,
                    i % 10 != 0,
                    profile,
                )
            )
    admin_conn.execute(
        "INSERT INTO dm_private.search_documents (team_id, document_id, subject_kind, subject_id, body, "
        "search_vector, search_state, pending_since, is_recallable, owner_profile_id) "
        "SELECT %(team)s, gen_random_uuid(), 'evidence', gen_random_uuid(), t, to_tsvector('english', t), "
        "'ready', NULL, true, %(profile)s "
        "FROM (SELECT 'set based row ' || i || ' about kafka' AS t FROM generate_series(1, 50) AS i) AS s",
        {"team": team, "profile": profile},
    )
    assert_exact(admin_conn, team)
    admin_conn.execute(
        "UPDATE dm_private.search_documents SET is_recallable = NOT is_recallable "
        "WHERE team_id = %s AND search_vector @@ 'grafana'",
        (team,),
    )
    admin_conn.execute(
        "DELETE FROM dm_private.search_documents WHERE team_id = %s AND search_vector @@ 'kafka & set'",
        (team,),
    )
    admin_conn.execute("RESET session_replication_role")
    assert_exact(admin_conn, team)
    compact(admin_conn, team)
    assert_exact(admin_conn, team)
    assert admin_conn.execute(TRUTH_TOTALS_SQL, {"team": team}).fetchone() == (90 + 20, 4 * 110)


def test_concurrent_writers_of_one_hot_lexeme_never_wait_and_stay_exact(
    db_url: str, admin_conn: Conn
) -> None:
    team, profile = make_team(admin_conn, "gamma")
    ingest(admin_conn, team, profile, [{"text": "We go to the standup at nine."}])
    compact(admin_conn, team)
    first = psycopg.connect(db_url, autocommit=True)
    second = psycopg.connect(db_url, autocommit=True)
    try:
        with first.transaction():
            ingest(first, team, profile, [{"text": "Go live is Monday, go team."}])
            # the first writer holds its transaction open; the second appends deltas for the same team and
            # the same lexemes, and a compaction runs, all without waiting for it
            second.execute("SET lock_timeout = '2s'")
            with second.transaction():
                ingest(second, team, profile, [{"text": "Do we go live before the demo? Go!"}])
            compact(second, None)
            second.execute("RESET lock_timeout")
            assert_exact(second, team)  # the first writer's rows are not visible yet
        assert_exact(admin_conn, team)
        compact(admin_conn, None)
        assert_exact(admin_conn, team)
        truth = dict(admin_conn.execute(TRUTH_SQL, {"team": team}).fetchall())
        assert truth["go"] == 3

        # many writers at once, each with its own transaction, then the statistics
        errors: list[BaseException] = []

        def writer(n: int) -> None:
            try:
                with psycopg.connect(db_url, autocommit=True) as conn:
                    for j in range(5):
                        ingest(conn, team, profile, [{"text": f"go writer {n} batch {j} go go"}])
                        if j == 2:
                            compact(conn, None)
            except BaseException as error:  # re-raised in the main thread
                errors.append(error)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors, errors
        assert_exact(admin_conn, team)
        assert dict(admin_conn.execute(TRUTH_SQL, {"team": team}).fetchall())["go"] == 23
        compact(admin_conn, None)
        assert_exact(admin_conn, team)
    finally:
        first.close()
        second.close()


# ---------------------------------------------------------------- ranking


def test_bm25_ranks_a_rare_term_match_above_a_common_term_match(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "delta")
    filler = [{"text": f"Deployment notes number {i} about the cluster."} for i in range(30)]
    common_only, rare_only = ingest(
        admin_conn,
        team,
        profile,
        [
            # the common term three times, in a short document: ts_rank_cd's favourite
            {"text": "Cluster cluster cluster."},
            {"text": "The zookeeper quorum was lost on a long and otherwise unremarkable afternoon."},
            *filler,
        ],
    )[:2]
    hits = fulltext_hits(admin_conn, team, "cluster zookeeper")
    ranked = [uuid.UUID(h[0]) for h in hits]
    assert ranked[0] == rare_only
    assert common_only in ranked
    scores = {uuid.UUID(h[0]): h[2] for h in hits}
    assert scores[rare_only] > scores[common_only] > 0
    # term frequency still counts, saturating: three mentions beat one among same-length documents
    one, three = ingest(
        admin_conn,
        team,
        profile,
        [{"text": "Quorum lost alpha beta gamma."}, {"text": "Quorum quorum quorum alpha beta."}],
    )
    hits = fulltext_hits(admin_conn, team, "quorum")
    order = [uuid.UUID(h[0]) for h in hits]
    assert order.index(three) < order.index(one)


def test_all_terms_matches_survive_a_scan_budget_smaller_than_every_lexeme(admin_conn: Conn) -> None:
    admin_conn.execute(
        "INSERT INTO dm_private.ranking_profiles (name, version, settings) "
        "SELECT 'tiny-budget', 1, jsonb_set(settings, '{fulltext,scan_budget}', '5') "
        "FROM dm_private.ranking_profiles WHERE is_default"
    )
    team, profile = make_team(admin_conn, "epsilon")
    items = [{"text": f"Invoice {i} for the spring campaign."} for i in range(20)]
    items += [{"text": f"Receipt {i} for the summer campaign."} for i in range(20)]
    ingest(admin_conn, team, profile, items)
    both = ingest(
        admin_conn,
        team,
        profile,
        [{"text": f"Invoice and receipt {i} of the campaign."} for i in range(3)],
    )
    hits = fulltext_hits(admin_conn, team, "invoice receipt", request={"ranking_profile": "tiny-budget"})
    found = [uuid.UUID(h[0]) for h in hits]
    assert set(both) <= set(found)
    assert set(found[:3]) == set(both)
    # the any-term pass read at most the budget: 5 of the 23 invoice documents, plus the all-terms ones
    assert len(found) <= 5 + 3


def test_a_small_team_read_without_the_gin_index_gets_the_same_candidates(admin_conn: Conn) -> None:
    # 73 documents: with the default scan budget (500) the team is "small" and the branch reads its
    # rows through the btree and tests the match on each; with a budget of 50 it goes through the
    # GIN index. Both budgets build the same any-term query (the lexemes' frequencies, 20 + 23 or 3 + 3, fit
    # both) and no LIMIT cuts either pass, so the candidates, ranks and scores must be identical.
    admin_conn.execute(
        "INSERT INTO dm_private.ranking_profiles (name, version, settings) "
        "SELECT 'budget-50', 1, jsonb_set(settings, '{fulltext,scan_budget}', '50') "
        "FROM dm_private.ranking_profiles WHERE is_default"
    )
    team, profile = make_team(admin_conn, "smallteam")
    items = [{"text": f"Invoice {i} for the spring campaign."} for i in range(20)]
    items += [{"text": f"Invoice {i} paid in autumn."} for i in range(3)]
    items += [{"text": f"Receipt {i} for the summer campaign."} for i in range(20)]
    items += [{"text": f"Meeting notes {i} about hiring."} for i in range(30)]
    ingest(admin_conn, team, profile, items)
    for query in ("spring invoice", "invoice", "spring invoice -autumn", '"paid in autumn"'):
        small = fulltext_hits(admin_conn, team, query)
        indexed = fulltext_hits(admin_conn, team, query, request={"ranking_profile": "budget-50"})
        assert small, query
        assert small == indexed, query
    # a known id and a filter apply on the small-team read as on the index read
    known = [h[0] for h in fulltext_hits(admin_conn, team, "spring invoice")[:5]]
    request: dict[str, Any] = {"known_evidence_ids": known, "filters": {"memory_type": "semantic"}}
    small = fulltext_hits(admin_conn, team, "spring invoice", request=request)
    indexed = fulltext_hits(
        admin_conn, team, "spring invoice", request={**request, "ranking_profile": "budget-50"}
    )
    assert small
    assert small == indexed
    assert not set(known) & {h[0] for h in small}


def test_lexeme_keys_read_the_same_candidates_and_never_mix_teams_sharing_a_key_prefix(
    admin_conn: Conn,
) -> None:
    # Migration 0025 keys the GIN index by team prefix (first 8 hex digits of the team id) and
    # lexeme. Two teams whose ids share that prefix share posting lists; the explicit team predicate
    # must still keep each team's rows apart. With a budget of 50 the 73-document team goes
    # through the keyed index (any-term pass, and the all-terms pass when every lexeme is
    # required) or, for an "or" or an exclusion, the (team_id, search_vector) index; with the
    # default budget it is read row by row (team_pass). No LIMIT cuts either way, so the
    # candidates, ranks and scores must be identical, and none may come from the twin team.
    admin_conn.execute(
        "INSERT INTO dm_private.ranking_profiles (name, version, settings) "
        "SELECT 'budget-50', 1, jsonb_set(settings, '{fulltext,scan_budget}', '50') "
        "FROM dm_private.ranking_profiles WHERE is_default"
    )
    team, profile = make_team(admin_conn, "keyed")
    twin = uuid.UUID(str(team)[:8] + str(uuid.uuid4())[8:])
    admin_conn.execute("INSERT INTO dm_private.teams (team_id, name) VALUES (%s, 'keyed twin')", (twin,))
    row = admin_conn.execute("SELECT dm.ensure_profile(%s, 'twin author')", (twin,)).fetchone()
    assert row is not None
    twin_profile = uuid.UUID(str(row[0]))
    items = [{"text": f"Invoice {i} for the spring campaign."} for i in range(20)]
    items += [{"text": f"Invoice {i} paid in autumn."} for i in range(3)]
    items += [{"text": f"Receipt {i} for the summer campaign."} for i in range(20)]
    items += [{"text": f"Meeting notes {i} about hiring."} for i in range(30)]
    mine = set(ingest(admin_conn, team, profile, items))
    theirs = set(
        ingest(admin_conn, twin, twin_profile, [*items, {"text": "Invoice for the spring campaign."}])
    )
    keys = admin_conn.execute(
        "SELECT count(DISTINCT k) FROM dm_private.search_documents AS d, "
        "unnest(dm_private.search_team_lexemes(d.team_id, d.search_vector)) AS k "
        "WHERE d.team_id = ANY(%s) AND k LIKE '%%invoic'",
        ([team, twin],),
    ).fetchone()
    assert keys == (1,), "both teams' invoices share one key"
    for query in (
        "spring invoice",
        "invoice",
        "spring invoice -autumn",
        '"paid in autumn"',
        "invoice or receipt",
    ):
        small = fulltext_hits(admin_conn, team, query)
        indexed = fulltext_hits(admin_conn, team, query, request={"ranking_profile": "budget-50"})
        assert small, query
        assert small == indexed, query
        assert {uuid.UUID(h[0]) for h in indexed} <= mine, query
        twin_hits = fulltext_hits(admin_conn, twin, query, request={"ranking_profile": "budget-50"})
        assert {uuid.UUID(h[0]) for h in twin_hits} <= theirs, query


def test_dense_passes_read_the_same_first_matches_in_heap_order(admin_conn: Conn) -> None:
    # A pass whose lexemes most of a team holds reads the team's documents through
    # search_documents_team_order_idx (migration 0053: every key of a team is equal, so they come
    # in heap order) and stops at the scan_budget-th match, instead of a bitmap of every holder.
    # The bitmap scan keeps the first scan_budget matches in heap order too, so with a budget of 5
    # (every pass cut) both ways must give the same candidates, ranks and scores. dense_factor 0
    # takes the dense way whenever it may (any-term pass; all-terms pass of lexemes only), 1e12
    # never. Read in another order (the primary key orders by the random document ids), the
    # passes would keep other documents.
    for name, factor in (("dense-always", "0"), ("dense-never", "1e12")):
        admin_conn.execute(
            "INSERT INTO dm_private.ranking_profiles (name, version, settings) "
            "SELECT %s, 1, jsonb_set(jsonb_set(settings, '{fulltext,scan_budget}', '5'), "
            "'{fulltext,dense_factor}', %s::jsonb) FROM dm_private.ranking_profiles WHERE is_default",
            (name, factor),
        )
    team, profile = make_team(admin_conn, "dense")
    items: list[dict[str, Any]] = []
    for i in range(30):
        items.append({"text": f"Invoice {i} for the spring campaign, paid {'late' if i % 3 else 'early'}."})
        items.append({"text": f"Receipt {i} for the summer campaign and invoice {i}."})
        if i % 4 == 0:
            items.append({"text": f"Meeting notes {i} about hiring."})
    ingest(admin_conn, team, profile, items)
    queries = (
        "spring invoice",  # any-term pass cut (spring alone is over the budget), all-terms pass keyed
        "invoice",  # one lexeme: the all-terms pass alone
        "invoice campaign",
        "invoice -summer",  # an exclusion: the all-terms pass through (team_id, search_vector)
        '"summer campaign" invoice',  # a phrase: the all-terms pass keyed, never dense
        "invoice or receipt",
    )
    for query in queries:
        dense = fulltext_hits(admin_conn, team, query, request={"ranking_profile": "dense-always"})
        keyed = fulltext_hits(admin_conn, team, query, request={"ranking_profile": "dense-never"})
        assert dense, query
        assert dense == keyed, query
        assert len(dense) <= 2 * 5, query
    known = [h[0] for h in fulltext_hits(admin_conn, team, "spring invoice")[:4]]
    request: dict[str, Any] = {"known_evidence_ids": known, "filters": {"memory_type": "semantic"}}
    dense = fulltext_hits(
        admin_conn, team, "spring invoice", request={**request, "ranking_profile": "dense-always"}
    )
    keyed = fulltext_hits(
        admin_conn, team, "spring invoice", request={**request, "ranking_profile": "dense-never"}
    )
    assert dense
    assert dense == keyed
    assert not set(known) & {h[0] for h in dense}


# ---------------------------------------------------------------- isolation


def test_another_teams_statistics_never_move_a_teams_ranking(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "north")
    other, other_profile = make_team(admin_conn, "south")
    ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "Kafka broker restarted after the disk filled."},
            {"text": "Kafka consumer lag alerts fired twice."},
            {"text": "The disk of the postgres primary is at ninety percent."},
            {"text": "Lag on the replica stayed under a second."},
        ],
    )
    query = "kafka disk lag"
    before = fulltext_hits(admin_conn, team, query)
    assert before
    # team B floods the lexemes of A's query with thousands of documents, and compacts
    ingest(admin_conn, other, other_profile, [{"text": f"disk disk lag {i}"} for i in range(200)])
    compact(admin_conn, None)
    assert fulltext_hits(admin_conn, team, query) == before
    assert_exact(admin_conn, team)

    # every access path to the statistics stays inside the authenticated team
    with acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute(
            "SELECT count(*) AS n FROM dm_private.search_term_statistics WHERE team_id = %s", (other,)
        )
        assert cur.fetchone() == {"n": 0}
        cur.execute("SELECT count(*) AS n FROM dm_private.search_statistics_deltas")
        cur.execute("SELECT DISTINCT team_id FROM dm_private.search_term_statistics")
        assert [r["team_id"] for r in cur.fetchall()] == [team]
        cur.execute("SELECT * FROM dm_private.search_team_totals(%s)", (other,))
        assert cur.fetchone() == {"document_count": 0, "total_length": 0}
        cur.execute("SELECT * FROM dm_private.search_term_document_counts(%s, ARRAY['disk'])", (other,))
        assert cur.fetchone() == {"lexeme": "disk", "document_count": 0}
    # the app cannot write another team's deltas, nor compact another team
    with pytest.raises(psycopg.Error) as raised, acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute(
            "INSERT INTO dm_private.search_statistics_deltas (team_id, lexeme, document_delta) "
            "VALUES (%s, 'disk', 1000)",
            (other,),
        )
    assert raised.value.sqlstate == "42501"
    with pytest.raises(psycopg.Error) as raised, acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute("SELECT dm.compact_search_statistics(%s)", (other,))
    assert raised.value.sqlstate == "42501"
    # the branch itself refuses another team's ID
    with pytest.raises(psycopg.Error) as raised, acting_as(admin_conn, Principal(team)) as cur:
        cur.execute("SELECT * FROM dm_private.recall_fulltext_candidates(%s, 'disk', '{}', '{}')", (other,))
    assert raised.value.sqlstate == "42501"
    # an analyst without the team grant sees no statistics of either team
    admin_conn.execute("CREATE ROLE bm25_analyst_login LOGIN IN ROLE densemem_analyst")
    with admin_conn.transaction():
        admin_conn.execute("SET LOCAL SESSION AUTHORIZATION bm25_analyst_login")
        admin_conn.execute("SELECT set_config('densemem.team_id', %s, true)", (str(team),))
        assert admin_conn.execute("SELECT count(*) FROM dm_private.search_term_statistics").fetchone() == (0,)
        assert admin_conn.execute("SELECT count(*) FROM dm_private.search_statistics_deltas").fetchone() == (
            0,
        )
    # the app's own compaction (NULL: every team it can see) folds only its own team's deltas
    ingest(admin_conn, other, other_profile, [{"text": "south only"}])
    ingest(admin_conn, team, profile, [{"text": "north only"}])
    with acting_as(admin_conn, Principal(team, profile)) as cur:
        cur.execute("SELECT dm.compact_search_statistics(NULL) AS n")
    pending = admin_conn.execute(
        "SELECT team_id, count(*) FROM dm_private.search_statistics_deltas GROUP BY team_id"
    ).fetchall()
    assert [uuid.UUID(str(r[0])) for r in pending] == [other]
    assert_exact(admin_conn, team)
    assert_exact(admin_conn, other)


def test_branch_scores_equal_okapi_bm25_computed_independently(admin_conn: Conn) -> None:
    """tf from ts_rank's series, dl = length(tsvector), Lucene idf: checked against Python BM25."""
    team, profile = make_team(admin_conn, "zeta")
    texts = [
        "Alpha " * n + "bravo charlie" + " delta" * (n % 3) + f" filler{n}" for n in (1, 2, 3, 7, 20, 90, 300)
    ]
    texts += ["Bravo echo foxtrot.", "Echo echo golf hotel india juliet kilo lima."]
    ingest(admin_conn, team, profile, [{"text": t} for t in texts])
    query = "alpha bravo delta echo"
    hits = {uuid.UUID(h[0]): h[2] for h in fulltext_hits(admin_conn, team, query)}
    rows = admin_conn.execute(
        "SELECT subject_id, (SELECT array_agg(ARRAY[lexeme, COALESCE(cardinality(positions), 1)::text]) "
        "FROM unnest(search_vector)) FROM dm_private.search_documents "
        "WHERE team_id = %s AND subject_kind = 'evidence' AND is_recallable",
        (team,),
    ).fetchall()
    docs = {uuid.UUID(str(r[0])): {lex: int(tf) for lex, tf in r[1]} for r in rows}
    n = len(docs)
    avgdl = sum(len(d) for d in docs.values()) / n
    row = admin_conn.execute(
        "SELECT array_agg(lexeme) FROM unnest(to_tsvector('english', %s))", (query,)
    ).fetchone()
    assert row is not None
    terms = list(row[0])
    # the default profile's parameters (explain_recall ran with it)
    params = admin_conn.execute(
        "SELECT (settings #>> '{fulltext,bm25_k1}')::float8, (settings #>> '{fulltext,bm25_b}')::float8"
        " FROM dm_private.ranking_profiles WHERE is_default"
    ).fetchone()
    assert params is not None
    k1, b = float(params[0]), float(params[1])

    def bm25(doc: dict[str, int]) -> float:
        total = 0.0
        for t in terms:
            df = sum(1 for d in docs.values() if t in d)
            tf = doc.get(t, 0)
            if df and tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                total += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        return total

    expected = {i: bm25(d) for i, d in docs.items() if bm25(d) > 0}
    assert set(hits) == set(expected)
    for evidence, score in expected.items():
        assert hits[evidence] == pytest.approx(score, rel=1e-6), evidence
