"""Discovery's fuzzy and full-text seed lookups on team-qualified index keys.

dm_private.discovery_entity_seeds looks query words up by trigram similarity
on entity_names_team_trigram_idx (migration 0055) and query lexemes on
search_documents_entity_team_lexemes_idx (0056): keys that begin with the
team id's first 8 hex digits, probed with a subset of the word's trigrams
that every threshold match must share. These tests pin that the answer is
the one of the plain team-scoped lookups it replaced (REFERENCE below is the
former definition, verbatim but for its name and line breaks): misspellings, names sharing
word-start trigrams with thousands of others, thresholds that allow names
sharing no trigram (the fallback lookup), lexemes holding a quote (the
full-text fallback), a same-name entity of another team and a team whose id
shares the 8-digit prefix (never a seed of this team). The new lookups meet
rows in heap order whatever the plan; the former ones did so under the
bitmap scans the bench's plans used (a btree range of the team, which the
planner may take on a small table, met them in name order), so the
reference runs with plain index scans off.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import psycopg
import pytest

REFERENCE = r"""
CREATE OR REPLACE FUNCTION dm_private.test_reference_entity_seeds(
    seed_team_id uuid,
    query text,
    query_embedding public.vector DEFAULT NULL,
    seed_limit integer DEFAULT 5
)
RETURNS TABLE (entity_id uuid, score double precision)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = ''
SET plan_cache_mode = 'force_generic_plan'
AS $$
#variable_conflict use_column
DECLARE
    ngrams text [];
    fuzzy_words text [];
    or_query tsquery;
    active_contract integer;
    exact_found integer;
BEGIN
    IF seed_team_id IS NULL OR seed_team_id IS DISTINCT FROM dm_private.authenticated_team_id() THEN
        RAISE EXCEPTION 'team_id does not match the authenticated team' USING ERRCODE = '42501';
    END IF;
    IF seed_limit IS NULL OR seed_limit < 1 THEN
        RETURN;
    END IF;
    ngrams := dm_private.discovery_name_ngrams(query);

    -- Names and aliases spelled as in the query: the strongest signal,
    -- longer names first ("dense mem" over "mem").
    RETURN QUERY
    SELECT x.entity_id, x.score
    FROM (
        SELECT n.entity_id,
               pg_catalog.max(2.0 + 0.1 * pg_catalog.array_length(
                   pg_catalog.string_to_array(n.normalized_name, ' '), 1))
                   ::double precision AS score
        FROM dm_private.entity_names AS n
        WHERE n.team_id = seed_team_id
          AND n.normalized_name = ANY(ngrams)
        GROUP BY n.entity_id
    ) AS x
    ORDER BY x.score DESC, x.entity_id
    LIMIT seed_limit;
    GET DIAGNOSTICS exact_found = ROW_COUNT;
    IF exact_found > 0 THEN
        RETURN;
    END IF;

    fuzzy_words := ARRAY(
        SELECT g.word
        FROM pg_catalog.unnest(ngrams) AS g (word)
        WHERE pg_catalog.strpos(g.word, ' ') = 0
          AND pg_catalog.length(g.word) >= 5
          AND pg_catalog.length(pg_catalog.to_tsvector('english'::regconfig, g.word)) > 0
        ORDER BY pg_catalog.length(g.word) DESC, g.word
        LIMIT 5);
    SELECT pg_catalog.string_agg(pg_catalog.quote_literal(l.lexeme), ' | ')::tsquery
    INTO or_query
    FROM pg_catalog.unnest(dm_private.discovery_lexemes(query)) AS l (lexeme);
    IF query_embedding IS NOT NULL THEN
        SELECT c.contract_id INTO active_contract
        FROM dm_private.embedding_contracts AS c
        WHERE c.is_active AND c.dimensions = public.vector_dims(query_embedding);
    END IF;

    RETURN QUERY
    WITH fuzzy AS (
        -- Misspellings: trigram similarity per query word, bounded per word.
        SELECT f.entity_id, 1.5 * f.sim AS score
        FROM pg_catalog.unnest(fuzzy_words) AS g (word)
        CROSS JOIN LATERAL (
            SELECT c.entity_id, public.similarity(c.normalized_name, g.word) AS sim
            FROM (
                SELECT n.entity_id, n.normalized_name
                FROM dm_private.entity_names AS n
                WHERE n.team_id = seed_team_id
                  AND n.normalized_name OPERATOR(public.%) g.word
                LIMIT 20
            ) AS c
            ORDER BY 2 DESC, c.entity_id
            LIMIT 3
        ) AS f
        WHERE f.sim >= 0.5
    ),
    fulltext AS (
        -- Entity documents (canonical name, aliases, kind) sharing a lexeme with the query.
        SELECT d.subject_id AS entity_id,
               1.0 + LEAST(pg_catalog.ts_rank_cd(d.search_vector, or_query), 0.5) AS score
        FROM (
            SELECT sd.subject_id, sd.search_vector
            FROM dm_private.search_documents AS sd
            WHERE sd.team_id = seed_team_id
              AND sd.subject_kind = 'entity'::dm_private.subject_kind
              AND sd.search_vector OPERATOR(pg_catalog.@@) or_query
            LIMIT 50
        ) AS d
        WHERE or_query IS NOT NULL
    ),
    by_vector AS (
        -- Entity and relationship documents by meaning, current vectors of the
        -- active contract only; a relationship document seeds both endpoints.
        SELECT v.subject_kind, v.subject_id, 1.5 * (1.0 - v.distance) AS score
        FROM (
            SELECT sd.subject_kind, sd.subject_id,
                   (de.embedding OPERATOR(public.<=>) query_embedding::public.halfvec) AS distance
            FROM dm_private.search_documents AS sd
            JOIN dm_private.document_embeddings AS de
              ON de.team_id = sd.team_id AND de.document_id = sd.document_id
             AND de.contract_id = active_contract
             AND de.document_version = sd.document_version AND de.source_version = sd.source_version
            WHERE sd.team_id = seed_team_id
              AND sd.subject_kind IN ('entity'::dm_private.subject_kind,
                                      'relationship'::dm_private.subject_kind)
              AND active_contract IS NOT NULL
            ORDER BY 3, sd.subject_id
            LIMIT seed_limit * 2
        ) AS v
        WHERE v.distance < 0.6
    ),
    vector_entities AS (
        SELECT bv.subject_id AS entity_id, bv.score
        FROM by_vector AS bv
        WHERE bv.subject_kind = 'entity'
        UNION ALL
        SELECT ends.entity_id, bv.score * 0.8
        FROM by_vector AS bv
        JOIN dm_private.relationships AS r
          ON r.team_id = seed_team_id AND r.relationship_id = bv.subject_id
        CROSS JOIN LATERAL (VALUES (r.subject_entity_id), (r.object_entity_id)) AS ends (entity_id)
        WHERE bv.subject_kind = 'relationship'
          AND ends.entity_id IS NOT NULL
          AND r.status = 'active' AND r.tier IN ('validated_claim', 'fact')
    ),
    found AS (
        SELECT fuzzy.entity_id, fuzzy.score FROM fuzzy
        UNION ALL SELECT fulltext.entity_id, fulltext.score FROM fulltext
        UNION ALL SELECT vector_entities.entity_id, vector_entities.score FROM vector_entities
    )
    SELECT found.entity_id, (pg_catalog.max(found.score) + 0.05 * (pg_catalog.count(*) - 1))::double precision
    FROM found
    JOIN dm_private.entities AS e ON e.team_id = seed_team_id AND e.entity_id = found.entity_id
    GROUP BY found.entity_id
    ORDER BY 2 DESC, found.entity_id
    LIMIT seed_limit;
END
$$;
"""

TEAM = uuid.UUID("0badc0de-0000-4000-8000-000000000001")
# Same first 8 hex digits: the same index keys, another team.
TWIN = uuid.UUID("0badc0de-ffff-4000-8000-000000000002")
OTHER = uuid.UUID("7e57c0de-0000-4000-8000-000000000003")

NAMES = [
    "project atlas",
    "postgresql",
    "postgres operator",
    "redis",
    "kubernetes",
    "berlin office",
    "search team",
    "x.org/a'b mirror",
    "dense-mem",
    "monitoring stack",
] + [f"person {i}" for i in range(1, 400)]
# Words over a four-letter alphabet: many borderline trigram matches, so a
# probe that left out one trigram too many would miss rows of the window.
_rng = random.Random(7)
NAMES += sorted({"".join(_rng.choice("abcd") for _ in range(_rng.randrange(3, 8))) for _ in range(300)})
TWIN_ONLY = ["project atlantis", "redis cluster", "kubernetes ops", "personnel office"]


def _load(conn: psycopg.Connection[Any]) -> None:
    for team, name in ((TEAM, "seed index team"), (TWIN, "seed index twin"), (OTHER, "seed index other")):
        conn.execute("INSERT INTO dm_private.teams (team_id, name) VALUES (%s, %s)", (team, name))
    rows = []
    for team, names in ((TEAM, NAMES), (TWIN, NAMES[:10] + TWIN_ONLY), (OTHER, NAMES[:10])):
        for n in names:
            rows.append((team, uuid.uuid5(team, n), n))
    random.Random(3).shuffle(rows)  # heap order unrelated to names
    for team, entity, n in rows:
        conn.execute(
            "INSERT INTO dm_private.entities (team_id, entity_id, canonical_name, normalized_name, kind) "
            "VALUES (%s, %s, %s, %s, 'thing')",
            (team, entity, n, n),
        )
        conn.execute(
            "INSERT INTO dm_private.entity_names (team_id, entity_id, name, normalized_name, is_canonical) "
            "VALUES (%s, %s, %s, %s, true)",
            (team, entity, n, n),
        )
        conn.execute(
            "INSERT INTO dm_private.search_documents (team_id, document_id, subject_kind, subject_id, body, "
            "search_vector) VALUES (%s, %s, 'entity', %s, %s, to_tsvector('english', %s))",
            (team, uuid.uuid5(entity, "doc"), entity, n, n),
        )
    conn.execute("ANALYZE dm_private.entity_names")
    conn.execute("ANALYZE dm_private.search_documents")


def _typo(rng: random.Random, word: str) -> str:
    w = list(word)
    i = rng.randrange(len(w))
    k = rng.randrange(3)
    if k == 0 and len(w) > 3:
        del w[i]
    elif k == 1:
        w.insert(i, rng.choice("abcdefghijklmnopqrstuvwxyz"))
    else:
        w[i] = rng.choice("abcdefghijklmnopqrstuvwxyz")
    return "".join(w)


def _queries() -> list[str]:
    rng = random.Random(11)
    out = []
    for n in NAMES[:10] + TWIN_ONLY + ["person 17", "person 321"]:
        out.append(f"What about {_typo(rng, n)} lately?")
        out.append(f"Who works with {_typo(rng, _typo(rng, n))}?")
    out += [
        "What else is related to these notes?",
        "personnel persons personal people",
        "postgre operators",
        "atlantis",
        "mirror of http://x.org/a'b please",
        "monitoring offices search",
        "",
        "zzzzzz qqqqqq",
    ]
    out += [
        " ".join("".join(rng.choice("abcd") for _ in range(rng.randrange(5, 9))) for _ in range(3))
        for _ in range(40)
    ]
    return out


def _seeds(conn: psycopg.Connection[Any], function: str, query: str) -> list[tuple[Any, ...]]:
    return conn.execute(
        f"SELECT entity_id, score FROM dm_private.{function}(%s, %s, NULL, 5) WITH ORDINALITY "
        "ORDER BY ordinality",
        (TEAM, query),
    ).fetchall()


@pytest.mark.parametrize("threshold", ["0.3", "0", "0.7"])
def test_indexed_seed_lookups_answer_as_the_plain_ones(
    admin_conn: psycopg.Connection[Any], threshold: str
) -> None:
    _load(admin_conn)
    admin_conn.execute(REFERENCE)
    admin_conn.execute("SELECT set_config('densemem.team_id', %s, false)", (str(TEAM),))
    admin_conn.execute(f"SET pg_trgm.similarity_threshold = {threshold}")
    # The former lookups' LIMIT kept whichever matches their plan met first:
    # heap order under a bitmap scan (the bench's plans), name order under a
    # btree range of the team, which the planner takes on a table this
    # small. Plain index scans off (before either function plans): the
    # reference meets rows in heap order, as the new lookups always do.
    admin_conn.execute("SET enable_indexscan = off")
    admin_conn.execute("SET enable_indexonlyscan = off")
    team_entities = {uuid.uuid5(TEAM, n) for n in NAMES}
    found = 0
    for query in _queries():
        got = _seeds(admin_conn, "discovery_entity_seeds", query)
        assert got == _seeds(admin_conn, "test_reference_entity_seeds", query), query
        # Never an entity of the twin (same key prefix) or of the other team.
        assert {row[0] for row in got} <= team_entities, query
        found += bool(got)
    assert found >= 10  # the comparison is not between empty answers


def test_the_lookups_take_the_team_qualified_indexes(admin_conn: psycopg.Connection[Any]) -> None:
    """The plan reads the new indexes (a plan on the old ones would still be correct, and slow)."""
    _load(admin_conn)
    admin_conn.execute("SELECT set_config('densemem.team_id', %s, false)", (str(TEAM),))
    admin_conn.execute("LOAD 'auto_explain'")
    admin_conn.execute("SET auto_explain.log_min_duration = 0")
    admin_conn.execute("SET auto_explain.log_nested_statements = on")
    admin_conn.execute("SET client_min_messages = log")
    plans: list[str] = []
    admin_conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
    _seeds(admin_conn, "discovery_entity_seeds", "Who works with postgre operators?")
    text = "\n".join(plans)
    assert "entity_names_team_trigram_idx" in text
    assert "search_documents_entity_team_lexemes_idx" in text


def test_the_index_expression_is_the_team_prefix_and_each_trigram(
    admin_conn: psycopg.Connection[Any],
) -> None:
    row = admin_conn.execute(
        "SELECT dm_private.entity_name_team_trigrams(%s, 'redis'), public.show_trgm('redis')", (TEAM,)
    ).fetchone()
    assert row is not None
    assert row[0] == ["0badc0de" + t for t in row[1]]
