"""Exchange context in the full-text branch (fulltext.context_radius, sql/35) and the content part of
relevance (relevance_mix.content, sql/50), both off unless a ranking profile sets them.

With context_radius r > 0, a turn is searched as the exchange it closes: the eligible turns written up
to r sequence numbers after a full-text match in its source group are candidates too, and each
candidate with a source group is scored on its own tsvector concatenated with those of the
recallable turns written up to r before it in that group. Evidence without a source group is scored
alone. The content part of relevance is min(1, distinct lexemes / content_pivot).
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from test_recall_support import explain, ingest, make_team, recall, result_ids

Conn = psycopg.Connection[Any]


def _profile(conn: Conn, name: str, changes: dict[str, dict[str, Any]]) -> None:
    """A non-default ranking profile: the default's settings without the two features (as before
    default v9), with some sections' keys changed."""
    row = conn.execute("SELECT settings FROM dm_private.ranking_profiles WHERE is_default").fetchone()
    assert row is not None
    settings: dict[str, Any] = row[0]
    settings["fulltext"].pop("context_radius", None)
    settings["relevance_mix"].pop("content", None)
    settings["relevance_mix"].pop("content_pivot", None)
    for section, values in changes.items():
        settings[section] = {**settings.get(section, {}), **values}
    conn.execute(
        "INSERT INTO dm_private.ranking_profiles (name, version, is_default, settings, description) "
        "VALUES (%s, 1, false, %s, 'test profile')",
        (name, Jsonb(settings)),
    )


def _fulltext(
    conn: Conn, team: uuid.UUID, query: str, profile: str, **request: Any
) -> dict[uuid.UUID, float]:
    """The full-text branch's hits of one recall: evidence_id -> BM25 score."""
    explained = explain(conn, team, query, request={"ranking_profile": profile, **request})
    return {uuid.UUID(h["evidence_id"]): float(h["branch_score"]) for h in explained["branches"]["fulltext"]}


def _conversation(conn: Conn, name: str) -> tuple[uuid.UUID, dict[str, uuid.UUID]]:
    """Written in this order: q (session 1, a question about the boat trip), a (session 1, the reply,
    no query term), x (session 2), c (session 1), and a note without a source group."""
    team, profile = make_team(conn, name)
    ids: dict[str, uuid.UUID] = {}
    turns = [
        ("q", "session_1", "How was the sailing trip to the lighthouse last weekend?"),
        ("a", "session_1", "Wonderful, we watched dolphins near the rocks all afternoon."),  # episodic
        ("x", "session_2", "Unrelated: the quarterly report is due on Friday."),
        ("c", "session_1", "Next month we plan to repaint the kitchen."),
        ("n", None, "A note about the sailing club membership fees."),
    ]
    for key, group, text in turns:
        source: dict[str, Any] = {"external_id": key, "kind": "conversation_turn"}
        if group is not None:
            source["source_group"] = group
        memory_type = "episodic" if key == "a" else "conversation"
        [ids[key]] = ingest(
            conn, team, profile, [{"text": text, "source": source, "memory_type": memory_type}]
        )
    return team, ids


def test_exchange_context_is_off_unless_the_profile_sets_it(admin_conn: Conn) -> None:
    team, ids = _conversation(admin_conn, "exchange-off")
    _profile(admin_conn, "plain", {})
    _profile(admin_conn, "ctx_zero", {"fulltext": {"context_radius": 0}})
    _profile(admin_conn, "ctx_one", {"fulltext": {"context_radius": 1}})
    default = _fulltext(admin_conn, team, "sailing trip lighthouse", "plain")
    zero = _fulltext(admin_conn, team, "sailing trip lighthouse", "ctx_zero")
    assert default == zero
    assert set(default) == {ids["q"], ids["n"]}
    one = _fulltext(admin_conn, team, "sailing trip lighthouse", "ctx_one")
    assert set(one) != set(default)  # the test can fail: radius 1 changes the branch
    # default v9 (0049) searches with radius 1
    assert _fulltext(admin_conn, team, "sailing trip lighthouse", "default") == one


def test_a_reply_is_found_through_the_turn_it_answers(admin_conn: Conn) -> None:
    team, ids = _conversation(admin_conn, "exchange-on")
    _profile(admin_conn, "plain", {})
    _profile(admin_conn, "ctx_one", {"fulltext": {"context_radius": 1}})
    _profile(admin_conn, "ctx_two", {"fulltext": {"context_radius": 2}})
    one = _fulltext(admin_conn, team, "sailing trip lighthouse", "ctx_one")
    off = _fulltext(admin_conn, team, "sailing trip lighthouse", "plain")
    # a answers q (the next write, same group)
    assert set(one) == {ids["q"], ids["a"], ids["n"]}
    assert one[ids["a"]] > 0
    # q has no predecessor and n no source group: both scored alone, as without the context
    assert one[ids["q"]] == off[ids["q"]]
    assert one[ids["n"]] == off[ids["n"]]
    # radius 2 reaches x (another group: not a follower); c is three writes after q: out
    two = _fulltext(admin_conn, team, "sailing trip lighthouse", "ctx_two")
    assert set(two) == {ids["q"], ids["a"], ids["n"]}
    # a turn matching on its own gains its predecessor's matching terms
    lighthouse = _fulltext(admin_conn, team, "lighthouse dolphins", "ctx_one")
    alone = _fulltext(admin_conn, team, "lighthouse dolphins", "plain")
    assert lighthouse[ids["a"]] > alone[ids["a"]]


def test_followers_obey_the_request_filters(admin_conn: Conn) -> None:
    team, ids = _conversation(admin_conn, "exchange-filters")
    _profile(admin_conn, "ctx_one", {"fulltext": {"context_radius": 1}})
    hits = _fulltext(
        admin_conn, team, "sailing trip lighthouse", "ctx_one", known_evidence_ids=[str(ids["a"])]
    )
    assert ids["a"] not in hits and ids["q"] in hits
    # a is episodic: a filter on conversation memory keeps its question and drops it
    hits = _fulltext(
        admin_conn, team, "sailing trip lighthouse", "ctx_one", filters={"memory_type": ["conversation"]}
    )
    assert set(hits) == {ids["q"], ids["n"]}


def test_the_content_part_of_relevance_prefers_the_turn_that_says_more(admin_conn: Conn) -> None:
    team, profile = make_team(admin_conn, "content-mix")
    short, long = ingest(
        admin_conn,
        team,
        profile,
        [
            {"text": "Paris!", "memory_type": "semantic"},
            {
                "text": "We spent a week in Paris: museums every morning, long walks along the river, "
                "small bakeries, a concert in an old church and a day trip to the gardens.",
                "memory_type": "semantic",
            },
        ],
    )
    # two candidates: fusion min-max gives the short text 1 and the long one 0, so the content
    # part must outweigh the whole fusion share to reorder them
    _profile(admin_conn, "content_heavy", {"relevance_mix": {"content": 2.0, "content_pivot": 20}})
    _profile(admin_conn, "plain", {})
    _profile(admin_conn, "content_zero", {"relevance_mix": {"content": 0}})
    # BM25 favours the short text (length normalisation): it ranks first without the content part
    assert result_ids(recall(admin_conn, team, "Paris", request={"ranking_profile": "plain"})) == [
        short,
        long,
    ]
    assert result_ids(recall(admin_conn, team, "Paris", request={"ranking_profile": "content_zero"})) == [
        short,
        long,
    ]
    assert result_ids(recall(admin_conn, team, "Paris", request={"ranking_profile": "content_heavy"})) == [
        long,
        short,
    ]


def test_a_larger_team_reads_the_same_context_as_a_small_one(admin_conn: Conn) -> None:
    """The neighbourhood of the matches comes from the rows the small-team pass reads, or, above
    scan_budget recallable documents, from (team_id, sequence_number) ranges around the matches:
    both ways give the same candidates and scores, at radius 1 and 2, with filters, and with a
    predecessor that is recallable but not eligible (a known ID)."""
    team, ids = _conversation(admin_conn, "exchange-large")
    documents = admin_conn.execute(
        "SELECT count(*) FROM dm_private.search_documents WHERE team_id = %s AND subject_kind = 'evidence' "
        "AND is_recallable",
        (team,),
    ).fetchone()
    assert documents is not None and documents[0] == 5
    for radius in (1, 2):
        # 500 >= 5 documents: the small-team pass; 4 < 5: the lexeme-key passes (whose four
        # rarest frequencies still fit: the same matches)
        _profile(admin_conn, f"small_{radius}", {"fulltext": {"context_radius": radius}})
        _profile(admin_conn, f"large_{radius}", {"fulltext": {"context_radius": radius, "scan_budget": 4}})
        cases: list[tuple[str, dict[str, Any]]] = [
            ("sailing trip lighthouse", {}),
            ("lighthouse dolphins", {}),
            ("dolphins", {"known_evidence_ids": [str(ids["q"])]}),
            ("sailing trip lighthouse", {"known_evidence_ids": [str(ids["a"])]}),
            ("sailing trip lighthouse", {"filters": {"memory_type": ["conversation"]}}),
            ('"sailing trip" or kitchen', {}),
            ("sailing -club", {}),
        ]
        for query, request in cases:
            small = _fulltext(admin_conn, team, query, f"small_{radius}", **request)
            large = _fulltext(admin_conn, team, query, f"large_{radius}", **request)
            assert small, (radius, query, request)
            assert large == small, (radius, query, request)
        # the test can fail: a follower comes from the neighbourhood read
        assert ids["a"] in _fulltext(admin_conn, team, "sailing trip lighthouse", f"large_{radius}")
        # q is a known ID (not a candidate) yet still a's predecessor: a scores on both turns
        plain = _fulltext(admin_conn, team, "lighthouse dolphins", f"large_{radius}")
        known = _fulltext(
            admin_conn, team, "lighthouse dolphins", f"large_{radius}", known_evidence_ids=[str(ids["q"])]
        )
        assert ids["q"] not in known and known[ids["a"]] == plain[ids["a"]]
