"""Team isolation of every table and every write function.

Two teams, A and B, are filled through the write functions (plus, as
superuser, the rows no write function makes: API keys, analyst grants,
ranking overrides, vectors, telemetry). Then, acting as densemem_app with
team A's settings and B's IDs in hand, A tries to read, change, insert into,
link to and erase B's rows. After every attempt B's rows, read by the
superuser, must be exactly what they were.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from conftest import create_database_from_template, drop_database
from densemem.store import write
from densemem.store.session import Principal, acting_as

# Every team table of the foundation schema. test_every_team_table_is_listed
# fails when a table with team_id is missing here or elsewhere covered.
TEAM_TABLES = [
    "teams",
    "profiles",
    "api_keys",
    "team_role_grants",
    "sources",
    "source_revisions",
    "evidence",
    "erasure_tombstones",
    "entities",
    "entity_names",
    "relationships",
    "relationship_evidence",
    "verification_events",
    "lifecycle_transitions",
    "conflicts",
    "hypotheses",
    "search_documents",
    "document_embeddings",
    "team_ranking_overrides",
    "recall_feedback",
    "usage_counters",
    "usage_snapshots",
    "usage_snapshot_counts",
    "recall_telemetry",
]
# team_role_grants is visible by login role (a role sees the grants naming it), not by team.
VISIBLE_BY_TEAM = [t for t in TEAM_TABLES if t != "team_role_grants"]


@dataclass
class Team:
    name: str
    principal: Principal
    evidence_ids: list[uuid.UUID]
    erased_id: uuid.UUID
    entity_ids: list[uuid.UUID]
    relationship_ids: list[uuid.UUID]
    source_external_id: str

    @property
    def team_id(self) -> uuid.UUID:
        return self.principal.team_id


def _scalar(conn: psycopg.Connection[Any], query: Any, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def populate(admin: psycopg.Connection[Any], url: str, name: str) -> Team:
    team_id = _scalar(admin, "SELECT dm.ensure_team(%s)", (name,))
    profile_id = _scalar(admin, "SELECT dm.ensure_profile(%s, 'author')", (team_id,))
    principal = Principal(team_id, profile_id)
    source = f"doc:{name}-only"
    with psycopg.connect(url) as conn, acting_as(conn, principal) as cur:
        evidence = write.ingest_evidence(
            cur,
            team_id=team_id,
            items=[
                {
                    "text": f"{name}: Mark works on Dense-Mem.",
                    "source": {"external_id": source, "kind": "doc"},
                },
                {
                    "text": f"{name}: Dense-Mem uses PostgreSQL.",
                    "source": {"external_id": "chat:1", "kind": "chat"},
                },
                {"text": f"{name}: to be erased.", "source": {"external_id": "chat:1", "kind": "chat"}},
            ],
        )
        write.ingest_evidence(
            cur,
            team_id=team_id,
            items=[
                {
                    "text": f"{name}: revised.",
                    "source": {"external_id": "chat:1", "kind": "chat", "revision": "2"},
                }
            ],
        )
        entities = write.upsert_entities(
            cur,
            team_id=team_id,
            items=[
                {"name": "Mark", "aliases": ["Marky"], "kind": "person"},
                {"name": "Dense-Mem"},
                {"name": "PostgreSQL"},
            ],
        )
        works_on = write.assert_relationship(
            cur,
            team_id=team_id,
            relationship={
                "subject_entity_id": entities[0],
                "predicate": "works_on",
                "object_entity_id": entities[1],
                "evidence_ids": [{"evidence_id": evidence[0], "span_start": 0, "span_end": 4}],
            },
        )
        works_on_other = write.assert_relationship(
            cur,
            team_id=team_id,
            relationship={
                "subject_entity_id": entities[0],
                "predicate": "works_on",
                "object_entity_id": entities[2],
                "evidence_ids": [evidence[1]],
            },
        )
        write.record_verification(
            cur, team_id=team_id, relationship_id=works_on, decision="fact", rationale="seen"
        )
        write.move_relationship(cur, team_id=team_id, relationship_id=works_on_other, move="dispute")
        write.add_hypothesis(
            cur, team_id=team_id, hypothesis={"statement": "Mark leads it.", "source_external_id": source}
        )
        write.record_feedback(
            cur,
            team_id=team_id,
            feedback={"query": "who", "evidence_id": evidence[0], "judgment": "used", "rank": 1},
        )
        write.take_usage_snapshot(cur, team_id=team_id)
        write.erase_evidence(cur, team_id=team_id, evidence_id=evidence[2], reason="request")
    # Rows no write function makes.
    admin.execute("SELECT dm.issue_api_key(%s, %s)", (team_id, profile_id))
    admin.execute("SELECT dm.grant_team_to_role(%s, %s)", (team_id, f"analyst_{name}"))
    admin.execute(
        "INSERT INTO dm_private.team_ranking_overrides (team_id, ranking_profile_id) "
        "SELECT %s, ranking_profile_id FROM dm_private.ranking_profiles WHERE is_default",
        (team_id,),
    )
    admin.execute(
        "INSERT INTO dm_private.recall_telemetry (team_id, recall_id, ranking_profile_version, "
        "search_index_profile_version) VALUES (%s, gen_random_uuid(), 'default@1', 'test')",
        (team_id,),
    )
    admin.execute(
        "INSERT INTO dm_private.document_embeddings "
        "(team_id, document_id, contract_id, document_version, source_version, embedding) "
        "SELECT d.team_id, d.document_id, c.contract_id, d.document_version, d.source_version, "
        "array_fill(0.05::real, ARRAY[c.dimensions])::vector::halfvec "
        "FROM dm_private.search_documents AS d, dm_private.embedding_contracts AS c "
        "WHERE c.is_active AND d.team_id = %s AND d.body <> ''",
        (team_id,),
    )
    return Team(name, principal, evidence[:2], evidence[2], entities, [works_on, works_on_other], source)


@dataclass
class World:
    url: str
    admin: psycopg.Connection[Any]
    a: Team
    b: Team


@pytest.fixture(scope="module")
def world(admin_url: str, template_url: str) -> Iterator[World]:
    url = create_database_from_template(admin_url)
    try:
        with psycopg.connect(url, autocommit=True) as admin:
            a = populate(admin, url, "alpha")
            b = populate(admin, url, "beta")
            yield World(url, admin, a, b)
    finally:
        drop_database(admin_url, url)


def team_rows(admin: psycopg.Connection[Any], team_id: uuid.UUID) -> dict[str, list[str]]:
    """Every row of the team in every team table, as canonical JSON text (read as superuser)."""
    tables = [
        r[0]
        for r in admin.execute(
            "SELECT table_name FROM information_schema.columns "
            "WHERE table_schema = 'dm_private' AND column_name = 'team_id' ORDER BY 1"
        ).fetchall()
    ]
    rows = {}
    for table in tables:
        query = sql.SQL(
            "SELECT to_jsonb(t)::text FROM dm_private.{} AS t WHERE t.team_id = %s ORDER BY 1"
        ).format(sql.Identifier(table))
        rows[table] = [r[0] for r in admin.execute(query, (team_id,)).fetchall()]
    return rows


def _count(cur: psycopg.Cursor[dict[str, Any]]) -> int:
    row = cur.fetchone()
    assert row is not None
    return int(row["n"])


def attempt(world: World, action: Callable[[psycopg.Cursor[dict[str, Any]]], Any]) -> str | None:
    """Run `action` as team A (densemem_app); the SQLSTATE it raised, or None when it succeeded."""
    with psycopg.connect(world.url) as conn:
        try:
            with acting_as(conn, world.a.principal) as cur:
                action(cur)
        except psycopg.Error as error:
            return error.sqlstate
    return None


def diagnostics(world: World, action: Callable[[psycopg.Cursor[dict[str, Any]]], Any]) -> tuple[Any, ...]:
    with psycopg.connect(world.url) as conn:
        try:
            with acting_as(conn, world.a.principal) as cur:
                action(cur)
        except psycopg.Error as error:
            d = error.diag
            return (d.sqlstate, d.message_primary, d.message_detail, d.message_hint)
    raise AssertionError("the action succeeded")


# ---------------------------------------------------------------- tables


def test_every_team_table_is_listed(world: World) -> None:
    found = {
        r[0]
        for r in world.admin.execute(
            "SELECT table_name FROM information_schema.columns "
            "WHERE table_schema = 'dm_private' AND column_name = 'team_id'"
        ).fetchall()
    }
    missing = sorted(found - set(TEAM_TABLES))
    # Tables added by later areas are checked generically by test_other_team_tables_are_isolated.
    assert set(TEAM_TABLES) <= found, f"listed tables that do not exist: {sorted(set(TEAM_TABLES) - found)}"
    print("team tables outside the foundation list:", missing)


# Read only by dm.authenticate_api_key (a definer function); see migration 0003.
NOT_READABLE_BY_APP = frozenset({"api_keys"})


@pytest.mark.parametrize("table", TEAM_TABLES)
def test_team_b_has_rows_in_every_table(world: World, table: str) -> None:
    """The precondition that gives the other table tests their teeth."""
    query = sql.SQL("SELECT count(*) FROM dm_private.{} WHERE team_id = %s").format(sql.Identifier(table))
    assert _scalar(world.admin, query, (world.b.team_id,)) > 0


@pytest.mark.parametrize("table", TEAM_TABLES)
def test_team_a_cannot_read_team_b_rows(world: World, table: str) -> None:
    ident = sql.Identifier(table)
    own = _scalar(
        world.admin,
        sql.SQL("SELECT count(*) FROM dm_private.{} WHERE team_id = %s").format(ident),
        (world.a.team_id,),
    )
    seen: dict[str, Any] = {}

    def read(cur: psycopg.Cursor[dict[str, Any]]) -> None:
        cur.execute(sql.SQL("SELECT count(*) AS n FROM dm_private.{}").format(ident))
        seen["all"] = _count(cur)
        cur.execute(
            sql.SQL("SELECT count(*) AS n FROM dm_private.{} WHERE team_id = %s").format(ident),
            (world.b.team_id,),
        )
        seen["b"] = _count(cur)

    if table in NOT_READABLE_BY_APP:
        # Stronger than RLS: the service role has no SELECT on the table at all.
        assert attempt(world, read) == "42501"
        return
    assert attempt(world, read) is None
    assert seen["b"] == 0
    if table in VISIBLE_BY_TEAM:
        assert seen["all"] == own, "team A sees exactly its own rows"


@pytest.mark.parametrize("table", TEAM_TABLES)
def test_team_a_cannot_change_or_delete_team_b_rows(world: World, table: str) -> None:
    ident = sql.Identifier(table)
    before = team_rows(world.admin, world.b.team_id)
    counts: dict[str, int] = {}

    def update(cur: psycopg.Cursor[dict[str, Any]]) -> None:
        cur.execute(
            sql.SQL("UPDATE dm_private.{} SET team_id = team_id WHERE team_id = %s").format(ident),
            (world.b.team_id,),
        )
        counts["update"] = cur.rowcount

    def delete(cur: psycopg.Cursor[dict[str, Any]]) -> None:
        cur.execute(sql.SQL("DELETE FROM dm_private.{} WHERE team_id = %s").format(ident), (world.b.team_id,))
        counts["delete"] = cur.rowcount

    def move_own_row_to_b(cur: psycopg.Cursor[dict[str, Any]]) -> None:
        cur.execute(
            sql.SQL("UPDATE dm_private.{} SET team_id = %s WHERE team_id = %s").format(ident),
            (world.b.team_id, world.a.team_id),
        )
        counts["move"] = cur.rowcount

    assert attempt(world, update) in (None, "42501")
    assert counts.get("update", 0) == 0
    assert attempt(world, delete) in (None, "42501")
    assert counts.get("delete", 0) == 0
    state = attempt(world, move_own_row_to_b)
    assert state == "42501" or (state is None and counts["move"] == 0), (state, counts)
    assert team_rows(world.admin, world.b.team_id) == before


@pytest.mark.parametrize("table", TEAM_TABLES)
def test_team_a_cannot_insert_rows_into_team_b(world: World, table: str) -> None:
    ident = sql.Identifier(table)
    sample = _scalar(
        world.admin,
        sql.SQL("SELECT to_jsonb(t) FROM dm_private.{} AS t WHERE t.team_id = %s LIMIT 1").format(ident),
        (world.b.team_id,),
    )
    before = team_rows(world.admin, world.b.team_id)

    def insert_copy(cur: psycopg.Cursor[dict[str, Any]]) -> None:
        # A fresh copy of one of B's rows: new values for every uuid key but team_id.
        row = dict(sample)
        for key in _own_key(table):
            row[key] = str(uuid.uuid4())
        cur.execute(
            sql.SQL(
                "INSERT INTO dm_private.{} OVERRIDING SYSTEM VALUE "
                "SELECT * FROM jsonb_populate_record(NULL::dm_private.{}, %s)"
            ).format(ident, ident),
            (Jsonb(row),),
        )

    assert attempt(world, insert_copy) == "42501"
    assert team_rows(world.admin, world.b.team_id) == before


def _own_key(table: str) -> set[str]:
    """The column that identifies a row of the table (given a fresh value so the copy is new)."""
    keys = {
        "profiles": "profile_id",
        "api_keys": "api_key_id",
        "sources": "source_id",
        "source_revisions": "revision_id",
        "evidence": "evidence_id",
        "entities": "entity_id",
        "relationships": "relationship_id",
        "verification_events": "verification_event_id",
        "lifecycle_transitions": "transition_id",
        "conflicts": "conflict_id",
        "hypotheses": "hypothesis_id",
        "search_documents": "document_id",
        "recall_feedback": "feedback_id",
        "recall_telemetry": "recall_id",
    }
    return {keys[table]} if table in keys else set()


def test_other_team_tables_are_isolated(world: World) -> None:
    """Tables added by other areas: whatever rows B has there stay invisible and unchangeable to A."""
    tables = [
        r[0]
        for r in world.admin.execute(
            "SELECT table_name FROM information_schema.columns "
            "WHERE table_schema = 'dm_private' AND column_name = 'team_id' AND NOT (table_name = ANY(%s)) "
            "ORDER BY 1",
            (TEAM_TABLES,),
        ).fetchall()
    ]
    before = team_rows(world.admin, world.b.team_id)
    for table in tables:
        ident = sql.Identifier(table)
        with psycopg.connect(world.url) as conn:
            try:
                with acting_as(conn, world.a.principal) as cur:
                    cur.execute(
                        sql.SQL("SELECT count(*) AS n FROM dm_private.{} WHERE team_id = %s").format(ident),
                        (world.b.team_id,),
                    )
                    assert _count(cur) == 0, f"{table}: team A sees team B rows"
            except psycopg.errors.InsufficientPrivilege:
                pass  # not readable by the service at all
            for statement in (
                "UPDATE dm_private.{} SET team_id = team_id WHERE team_id = %s",
                "DELETE FROM dm_private.{} WHERE team_id = %s",
            ):
                try:
                    with acting_as(conn, world.a.principal) as cur:
                        cur.execute(sql.SQL(statement).format(ident), (world.b.team_id,))
                        assert cur.rowcount == 0, f"{table}: team A changed team B rows"
                except psycopg.errors.InsufficientPrivilege:
                    pass
    assert team_rows(world.admin, world.b.team_id) == before


# ---------------------------------------------------------------- write functions

Action = Callable[[World], Callable[[psycopg.Cursor[dict[str, Any]]], Any]]


def _ingest_into_b_source(w: World) -> Callable[[psycopg.Cursor[dict[str, Any]]], Any]:
    def act(cur: psycopg.Cursor[dict[str, Any]]) -> None:
        ids = write.ingest_evidence(
            cur,
            team_id=w.a.team_id,
            items=[
                {
                    "text": "A's own words.",
                    "source": {"external_id": w.b.source_external_id, "kind": "doc", "revision": "9"},
                }
            ],
        )
        cur.execute(
            "SELECT s.source_id, s.team_id FROM dm_private.evidence AS e "
            "JOIN dm_private.sources AS s USING (team_id, source_id) WHERE e.evidence_id = %s",
            (ids[0],),
        )
        row = cur.fetchone()
        assert row is not None and row["team_id"] == w.a.team_id
        raise _Succeeded

    return act


def _upsert_b_entity_name(w: World) -> Callable[[psycopg.Cursor[dict[str, Any]]], Any]:
    def act(cur: psycopg.Cursor[dict[str, Any]]) -> None:
        ids = write.upsert_entities(
            cur, team_id=w.a.team_id, items=[{"name": "Mark", "aliases": ["B alias"], "kind": "person"}]
        )
        assert ids[0] not in w.b.entity_ids
        assert ids[0] == w.a.entity_ids[0], "the same name in team A is A's own entity"
        raise _Succeeded

    return act


class _Succeeded(Exception):
    """Raised by an action that is allowed to succeed, to roll its transaction back."""


FUNCTION_ATTACKS: dict[str, tuple[Action, str | None]] = {
    "ingest_evidence: B's source external id makes A's own source": (_ingest_into_b_source, None),
    "upsert_entities: B's entity name makes or finds A's own entity": (_upsert_b_entity_name, None),
    "assert_relationship: B's subject entity": (
        lambda w: (
            lambda cur: write.assert_relationship(
                cur,
                team_id=w.a.team_id,
                relationship={
                    "subject_entity_id": w.b.entity_ids[0],
                    "predicate": "knows",
                    "object_value": "x",
                },
            )
        ),
        "23503",
    ),
    "assert_relationship: B's object entity": (
        lambda w: (
            lambda cur: write.assert_relationship(
                cur,
                team_id=w.a.team_id,
                relationship={
                    "subject_entity_id": w.a.entity_ids[0],
                    "predicate": "knows",
                    "object_entity_id": w.b.entity_ids[1],
                },
            )
        ),
        "23503",
    ),
    "assert_relationship: B's evidence": (
        lambda w: (
            lambda cur: write.assert_relationship(
                cur,
                team_id=w.a.team_id,
                relationship={
                    "subject_entity_id": w.a.entity_ids[0],
                    "predicate": "knows",
                    "object_value": "x",
                    "evidence_ids": [w.b.evidence_ids[0]],
                },
            )
        ),
        "23503",
    ),
    "record_verification: B's relationship": (
        lambda w: (
            lambda cur: write.record_verification(
                cur, team_id=w.a.team_id, relationship_id=w.b.relationship_ids[1], decision="fact"
            )
        ),
        "DM404",
    ),
    "move_relationship: B's relationship": (
        lambda w: (
            lambda cur: write.move_relationship(
                cur, team_id=w.a.team_id, relationship_id=w.b.relationship_ids[0], move="retract"
            )
        ),
        "DM404",
    ),
    "move_relationship: superseded by B's relationship": (
        lambda w: (
            lambda cur: write.move_relationship(
                cur,
                team_id=w.a.team_id,
                relationship_id=w.a.relationship_ids[0],
                move="supersede",
                replacement_relationship_id=w.b.relationship_ids[0],
            )
        ),
        "DM404",
    ),
    "move_evidence: B's evidence": (
        lambda w: (
            lambda cur: write.move_evidence(
                cur, team_id=w.a.team_id, evidence_id=w.b.evidence_ids[0], move="quarantine"
            )
        ),
        "DM404",
    ),
    "erase_evidence: B's evidence": (
        lambda w: lambda cur: write.erase_evidence(cur, team_id=w.a.team_id, evidence_id=w.b.evidence_ids[0]),
        "DM404",
    ),
    "erase_evidence: B's erased evidence": (
        lambda w: lambda cur: write.erase_evidence(cur, team_id=w.a.team_id, evidence_id=w.b.erased_id),
        "DM404",
    ),
    "add_hypothesis: B's source": (
        lambda w: (
            lambda cur: write.add_hypothesis(
                cur,
                team_id=w.a.team_id,
                hypothesis={"statement": "x", "source_external_id": w.b.source_external_id},
            )
        ),
        "23503",
    ),
    "record_feedback: B's evidence": (
        lambda w: (
            lambda cur: write.record_feedback(
                cur,
                team_id=w.a.team_id,
                feedback={"query": "q", "evidence_id": w.b.evidence_ids[0], "judgment": "used"},
            )
        ),
        "23503",
    ),
    "take_usage_snapshot: only A's counters": (
        lambda w: lambda cur: _snapshot_holds_only_a(cur, w),
        None,
    ),
}


def _snapshot_holds_only_a(cur: psycopg.Cursor[dict[str, Any]], w: World) -> None:
    snapshot = write.take_usage_snapshot(cur, team_id=w.a.team_id)
    cur.execute(
        "SELECT count(*) FILTER (WHERE evidence_id = ANY(%s)) AS theirs, count(*) AS total "
        "FROM dm_private.usage_snapshot_counts WHERE usage_snapshot_id = %s",
        (w.b.evidence_ids, snapshot),
    )
    row = cur.fetchone()
    assert row is not None and row["theirs"] == 0 and row["total"] >= 1
    raise _Succeeded


@pytest.mark.parametrize("case", list(FUNCTION_ATTACKS))
def test_write_functions_cannot_reach_team_b(world: World, case: str) -> None:
    build, expected = FUNCTION_ATTACKS[case]
    before = team_rows(world.admin, world.b.team_id)
    action = build(world)
    with psycopg.connect(world.url) as conn:
        try:
            with acting_as(conn, world.a.principal) as cur:
                action(cur)
            outcome: str | None = "committed"
        except _Succeeded:
            outcome = None
        except psycopg.Error as error:
            outcome = error.sqlstate
    assert outcome == expected
    assert team_rows(world.admin, world.b.team_id) == before


# Every write function called by team A with team B's team_id (and B's IDs).
TEAM_MISMATCH_CALLS: dict[str, Action] = {
    "ingest_evidence": lambda w: (
        lambda cur: write.ingest_evidence(
            cur, team_id=w.b.team_id, items=[{"text": "x", "source": {"external_id": "s", "kind": "k"}}]
        )
    ),
    "upsert_entities": lambda w: (
        lambda cur: write.upsert_entities(cur, team_id=w.b.team_id, items=[{"name": "x"}])
    ),
    "assert_relationship": lambda w: (
        lambda cur: write.assert_relationship(
            cur,
            team_id=w.b.team_id,
            relationship={"subject_entity_id": w.b.entity_ids[0], "predicate": "p", "object_value": "v"},
        )
    ),
    "record_verification": lambda w: (
        lambda cur: write.record_verification(
            cur, team_id=w.b.team_id, relationship_id=w.b.relationship_ids[1], decision="rejected"
        )
    ),
    "move_relationship": lambda w: (
        lambda cur: write.move_relationship(
            cur, team_id=w.b.team_id, relationship_id=w.b.relationship_ids[0], move="retract"
        )
    ),
    "move_evidence": lambda w: (
        lambda cur: write.move_evidence(
            cur, team_id=w.b.team_id, evidence_id=w.b.evidence_ids[0], move="retract"
        )
    ),
    "erase_evidence": lambda w: (
        lambda cur: write.erase_evidence(cur, team_id=w.b.team_id, evidence_id=w.b.evidence_ids[0])
    ),
    "add_hypothesis": lambda w: (
        lambda cur: write.add_hypothesis(cur, team_id=w.b.team_id, hypothesis={"statement": "x"})
    ),
    "record_feedback": lambda w: (
        lambda cur: write.record_feedback(
            cur,
            team_id=w.b.team_id,
            feedback={"query": "q", "evidence_id": w.b.evidence_ids[0], "judgment": "used"},
        )
    ),
    "take_usage_snapshot": lambda w: lambda cur: write.take_usage_snapshot(cur, team_id=w.b.team_id),
}


def test_every_write_function_is_covered(world: World) -> None:
    functions = {
        r[0]
        for r in world.admin.execute(
            "SELECT p.proname FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace "
            "WHERE n.nspname = 'dm' AND has_function_privilege('densemem_app', p.oid, 'EXECUTE') "
            "AND p.proname = ANY(%s)",
            (list(TEAM_MISMATCH_CALLS),),
        ).fetchall()
    }
    assert functions == set(TEAM_MISMATCH_CALLS)
    attacked = {case.split(":")[0] for case in FUNCTION_ATTACKS}
    assert attacked == set(TEAM_MISMATCH_CALLS)


@pytest.mark.parametrize("function", list(TEAM_MISMATCH_CALLS))
def test_write_functions_refuse_another_team_id(world: World, function: str) -> None:
    before = team_rows(world.admin, world.b.team_id)
    assert attempt(world, TEAM_MISMATCH_CALLS[function](world)) == "42501"
    assert team_rows(world.admin, world.b.team_id) == before


@pytest.mark.parametrize(
    "function",
    ["record_verification", "move_relationship", "move_evidence", "erase_evidence"],
)
def test_another_teams_id_reads_like_an_unknown_id(world: World, function: str) -> None:
    def call(target: uuid.UUID) -> Callable[[psycopg.Cursor[dict[str, Any]]], Any]:
        team = world.a.team_id
        calls: dict[str, Callable[[psycopg.Cursor[dict[str, Any]]], Any]] = {
            "record_verification": lambda cur: write.record_verification(
                cur, team_id=team, relationship_id=target, decision="fact"
            ),
            "move_relationship": lambda cur: write.move_relationship(
                cur, team_id=team, relationship_id=target, move="retract"
            ),
            "move_evidence": lambda cur: write.move_evidence(
                cur, team_id=team, evidence_id=target, move="retract"
            ),
            "erase_evidence": lambda cur: write.erase_evidence(cur, team_id=team, evidence_id=target),
        }
        return calls[function]

    theirs = (
        world.b.relationship_ids[0]
        if "relationship" in function or "verification" in function
        else world.b.evidence_ids[0]
    )
    foreign = diagnostics(world, call(theirs))
    unknown = diagnostics(world, call(uuid.uuid4()))
    assert foreign[0] == "DM404"
    assert foreign == unknown
    assert str(theirs) not in json.dumps([str(part) for part in foreign])


ANALYST_CALLS = {
    "ingest_evidence": "SELECT dm.ingest_evidence(%(team)s, '[]')",
    "upsert_entities": "SELECT dm.upsert_entities(%(team)s, '[]')",
    "assert_relationship": "SELECT dm.assert_relationship(%(team)s, '{}')",
    "record_verification": "SELECT dm.record_verification(%(team)s, %(id)s, 'fact')",
    "move_relationship": "SELECT dm.move_relationship(%(team)s, %(id)s, 'retract')",
    "move_evidence": "SELECT dm.move_evidence(%(team)s, %(id)s, 'retract')",
    "erase_evidence": "SELECT dm.erase_evidence(%(team)s, %(id)s)",
    "add_hypothesis": "SELECT dm.add_hypothesis(%(team)s, '{}')",
    "record_feedback": "SELECT dm.record_feedback(%(team)s, '{}')",
    "take_usage_snapshot": "SELECT dm.take_usage_snapshot(%(team)s)",
}


@pytest.mark.parametrize("function", list(ANALYST_CALLS))
def test_analysts_cannot_call_write_functions(world: World, function: str) -> None:
    """Analysts and operators read under RLS; every write goes through the service role."""
    assert set(ANALYST_CALLS) == set(TEAM_MISMATCH_CALLS)
    for role in ("densemem_analyst", "densemem_operator"):
        analyst = Principal(world.a.team_id, world.a.principal.profile_id, role=role)  # type: ignore[arg-type]
        with psycopg.connect(world.url) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):  # noqa: SIM117
            with acting_as(conn, analyst) as cur:
                cur.execute(ANALYST_CALLS[function], {"team": world.a.team_id, "id": world.a.evidence_ids[0]})
