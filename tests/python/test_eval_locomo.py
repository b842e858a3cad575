"""LoCoMo harness: label normalisation, dates, and an end-to-end run on a tiny synthetic file.

The file is made here, in LoCoMo's shape; the real data is never read by tests.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from densemem.eval import compare, locomo, runner


def _turn(dia_id: str, speaker: str, text: str, caption: str | None = None) -> dict[str, Any]:
    turn: dict[str, Any] = {"speaker": speaker, "dia_id": dia_id, "text": text}
    if caption:
        turn["img_url"] = ["http://example.invalid/x.jpg"]
        turn["blip_caption"] = caption
    return turn


def synthetic_sample(sample_id: str, dog: str) -> dict[str, Any]:
    """Two sessions between Alice and Bob; the dog's name differs per conversation."""
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("D1:1", "Alice", "Hi Bob! I adopted a greyhound puppy last week."),
                _turn("D1:2", "Bob", "Congratulations! What did you call the greyhound?"),
                _turn("D1:3", "Alice", f"We named the greyhound {dog}, after my grandmother's dog."),
                _turn("D1:4", "Bob", "I started pottery classes at the community centre."),
            ],
            "session_2_date_time": "10:15 am on 20 June, 2023",
            "session_2": [
                _turn("D2:1", "Alice", "The marathon in Boston was exhausting but I finished it."),
                _turn(
                    "D2:2",
                    "Bob",
                    "Look at the vase I made in class!",
                    caption="a photo of a blue ceramic vase",
                ),
                _turn("D2:3", "Alice", "Beautiful. My sister Carol moved to Lisbon in June."),
                _turn("D2:4", "Bob", "Lisbon is lovely; I visited it for a conference in 2019."),
            ],
        },
        "qa": [
            {
                "question": "What is the name of Alice's greyhound?",
                "answer": dog,
                "evidence": ["D1:3"],
                "category": 4,
            },
            {
                "question": "When did Alice run the Boston marathon?",
                "answer": "June 2023",
                "evidence": ["d2 : 01"],
                "category": 2,
            },
            {
                "question": "What does Bob make in his pottery classes?",
                "answer": "a vase",
                "evidence": ["D1:4; D2:2"],
                "category": 1,
            },
            {
                "question": "Where did Alice's sister move?",
                "answer": "Lisbon",
                "evidence": ["D:2:3", "D"],
                "category": 4,
            },
            {
                "question": "What is Bob's favourite opera?",
                "answer": "none",
                "evidence": ["D9:9"],
                "category": 5,
            },
            {
                "question": "Who visited Lisbon for a conference?",
                "answer": "Bob",
                "evidence": ["D2:4", "D2:4"],
                "category": 3,
            },
        ],
    }


def write_file(folder: Path) -> Path:
    path = folder / "locomo_synthetic.json"
    path.write_text(
        json.dumps([synthetic_sample("conv-a", "Biscuit"), synthetic_sample("conv-b", "Pretzel")])
    )
    return path


def test_session_times_parse_to_utc() -> None:
    assert locomo.parse_session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert locomo.parse_session_time("12:09 am on 13 September, 2023") == datetime(
        2023, 9, 13, 0, 9, tzinfo=UTC
    )
    with pytest.raises(ValueError):
        locomo.parse_session_time("yesterday")


def test_normalisation_splits_repairs_and_counts_every_label(tmp_path: Path) -> None:
    conversations, report = locomo.load(write_file(tmp_path))
    first = conversations[0]
    by_text = {question.question: question for question in first.questions}
    assert by_text["When did Alice run the Boston marathon?"].evidence == ("D2:1",)
    assert by_text["What does Bob make in his pottery classes?"].evidence == ("D1:4", "D2:2")
    assert by_text["Where did Alice's sister move?"].evidence == ("D2:3",)
    assert by_text["Who visited Lisbon for a conference?"].evidence == ("D2:4",)
    # the opera question has only an unknown turn: not scorable
    assert "What is Bob's favourite opera?" not in by_text
    counts = report.as_dict()
    # per conversation: 7 raw labels; pieces: D1:3 kept, d2 : 01 normalised, D1:4 + D2:2 split (normalised),
    # D:2:3 normalised, D malformed, D9:9 unknown, D2:4 kept twice
    assert counts["raw_labels"] == 2 * 8
    assert counts["kept"] == 2 * 3
    assert counts["normalised"] == 2 * 4
    assert counts["split_labels"] == 2 * 1
    assert counts["dropped_malformed"] == 2 * 1
    assert counts["dropped_unknown"] == 2 * 1
    assert counts["unscorable_questions"] == ["conv-a:q4", "conv-b:q4"]


def test_turns_carry_speaker_session_time_and_image_caption(tmp_path: Path) -> None:
    conversations, _ = locomo.load(write_file(tmp_path))
    first = conversations[0]
    assert first.speakers == ("Alice", "Bob")
    vase = next(turn for turn in first.turns if turn.dia_id == "D2:2")
    assert (
        vase.text
        == "Bob: Look at the vase I made in class! [shared an image: a photo of a blue ceramic vase]"
    )
    assert vase.said_at == datetime(2023, 6, 20, 10, 15, tzinfo=UTC)
    assert first.now == datetime(2023, 6, 20, 11, 15, tzinfo=UTC)
    items = locomo.evidence_items(first, "Bob")
    assert [item["source"]["external_id"] for item in items] == ["D1:2", "D1:4", "D2:2", "D2:4"]
    assert items[0]["created_at"] == items[0]["valid_from"] == "2023-05-08T13:56:00+00:00"
    assert first.fingerprint() != conversations[1].fingerprint()


def test_malformed_files_are_refused(tmp_path: Path) -> None:
    sample = synthetic_sample("conv-x", "Rex")
    sample["conversation"]["session_2"][0]["dia_id"] = "D1:1"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([sample]))
    with pytest.raises(ValueError, match="repeated dia_id"):
        locomo.load(path)
    path.write_text(json.dumps({"not": "a list"}))
    with pytest.raises(ValueError):
        locomo.load(path)


def _missing(conn: psycopg.Connection[Any]) -> list[str]:
    needed = [
        "dm.ingest_evidence",
        "dm.upsert_entities",
        "dm.recall_memory",
        "dm_private.claim_embedding_batch",
    ]
    return [name for name in needed if not runner.function_exists(conn, name)]


def test_locomo_end_to_end_on_a_synthetic_file(
    tmp_path: Path, admin_conn: psycopg.Connection[Any], db_url: str
) -> None:
    missing = _missing(admin_conn)
    if missing:
        pytest.skip(f"not in the schema yet: {', '.join(missing)}")
    from densemem.embeddings.local import LocalProvider
    from densemem.eval.embedding import WorkerEmbedding

    path = write_file(tmp_path)
    branches = runner.parse_branches("fulltext=fulltext_only,vector=vector_only,hybrid=default")
    report = locomo.run(
        admin_conn, path, ks=[1, 2, 5], branches=branches, embedding=WorkerEmbedding(db_url, LocalProvider())
    )
    assert report["dataset"] == "locomo"
    assert report["documents_without_vector"] == 0
    assert report["turns"] == 16
    assert set(report["teams"]) == {"conv-a", "conv-b"}
    for name in ("fulltext", "vector", "hybrid"):
        branch = report["branches"][name]
        summary = branch["summary"]
        assert summary["questions"] == 10
        assert summary["leakage"] == 0, name
        assert summary["duplicates"] == 0, name
        by_qid = {question["qid"]: question for question in branch["questions"]}
        # Both teams hold a greyhound turn with the same words: each question must
        # find its own team's turn in the top 5 and never the other team's.
        for qid in ("conv-a:q0", "conv-b:q0"):
            assert by_qid[qid]["ranks"][0] is not None, (name, by_qid[qid])
            assert by_qid[qid]["retrieved"][by_qid[qid]["ranks"][0] - 1] == "D1:3"
            assert all(not external.startswith("foreign:") for external in by_qid[qid]["retrieved"])
            assert len(by_qid[qid]["retrieved"]) <= 5
        assert set(summary["by_group"]) == {"1:multi-hop", "2:temporal", "3:open-domain", "4:single-hop"}
        assert summary["by_slice"]["temporal"]["questions"] >= 2
        assert summary["latency_ms"]["p50"] > 0
    hybrid = report["branches"]["hybrid"]["summary"]["overall"]
    assert hybrid["recall@5"] >= 0.8
    # The report survives JSON and compares with itself: no change, point intervals at 0.
    saved = tmp_path / "report.json"
    saved.write_text(json.dumps(report, default=str))
    loaded = compare.load_report(saved)
    result = compare.compare_reports(loaded, loaded, samples=200)
    assert result["comparisons"]["hybrid"]["slices"]["all"]["recall@5"]["delta"] == 0.0
    assert compare.total_leakage(result) == 0
    # A second run reuses the loaded teams instead of ingesting twice.
    again = locomo.run(
        admin_conn, path, ks=[5], branches=branches[2:], embedding=WorkerEmbedding(db_url, LocalProvider())
    )
    assert again["teams"] == report["teams"]
    assert again["branches"]["hybrid"]["summary"]["overall"]["recall@5"] == pytest.approx(hybrid["recall@5"])
    teams = [uuid.UUID(value) for value in report["teams"].values()]
    assert runner.evidence_count(admin_conn, teams[0]) == 8


def test_leakage_is_counted_when_an_answer_holds_another_teams_evidence(
    tmp_path: Path, admin_conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The leakage check can fail: an answer carrying conv-b's evidence to conv-a is counted."""
    missing = _missing(admin_conn)
    if missing:
        pytest.skip(f"not in the schema yet: {', '.join(missing)}")
    conversations, _ = locomo.load(write_file(tmp_path))
    loaded = locomo.load_into_database(admin_conn, conversations)
    teams = [item.team_id for item in loaded]
    id_map = runner.external_ids(admin_conn, teams)
    foreign = [evidence_id for evidence_id, (team, _) in id_map.items() if team == teams[1]][:3]
    own = [evidence_id for evidence_id, (team, _) in id_map.items() if team == teams[0]][:2]
    answer = {"results": [{"evidence_id": str(value)} for value in [own[0], *foreign, own[1]]]}
    monkeypatch.setattr(runner, "recall", lambda *args, **kwargs: (answer, 1.0))
    query = locomo.eval_queries(loaded)[0]
    record = runner.ask(admin_conn, runner.Branch("hybrid", None), query, None, id_map, depth=5, ks=[5])
    assert record["leaked"] == 3
    assert record["retrieved"][1:4] == [f"foreign:{value}" for value in foreign]
    assert record["retrieved"][0] == id_map[own[0]][1]


def test_parser_slices_read_the_parse_shape() -> None:
    plain = {
        "time": {"intent": None, "window": None, "expressions": [], "temporal_question": False},
        "anchors": [],
    }
    assert runner.parser_slices(plain) == ()
    when = {"time": {"intent": None, "window": None, "temporal_question": True}, "anchors": []}
    assert runner.parser_slices(when) == ("temporal",)
    window = {
        "time": {"window": {"from": "2023-05-01", "to": "2023-06-01"}},
        "anchors": [{"value": "v1.2.3"}],
    }
    assert runner.parser_slices(window) == ("temporal", "exact-anchor")
    assert runner.parser_slices(None) == ()


def test_branch_specs() -> None:
    assert runner.parse_branches("fulltext=fulltext_only, hybrid=default,cand") == [
        runner.Branch("fulltext", "fulltext_only"),
        runner.Branch("hybrid", None),
        runner.Branch("cand", None),
    ]
    with pytest.raises(ValueError):
        runner.parse_branches("a=x,a=y")
    with pytest.raises(ValueError):
        runner.parse_branches(" , ")


def test_turns_are_written_in_conversation_order(tmp_path: Path, admin_conn: psycopg.Connection[Any]) -> None:
    """Sequence numbers follow the conversation, each turn written by its speaker's profile."""
    missing = _missing(admin_conn)
    if missing:
        pytest.skip(f"not in the schema yet: {', '.join(missing)}")
    conversations, _ = locomo.load(write_file(tmp_path))
    runs = locomo.speaker_runs(conversations[0])
    assert [speaker for speaker, _ in runs] == [
        "Alice",
        "Bob",
        "Alice",
        "Bob",
        "Alice",
        "Bob",
        "Alice",
        "Bob",
    ]
    loaded = locomo.load_into_database(admin_conn, conversations[:1])
    rows = admin_conn.execute(
        "SELECT s.external_id, p.name FROM dm_private.evidence AS e "
        "JOIN dm_private.sources AS s ON s.team_id = e.team_id AND s.source_id = e.source_id "
        "JOIN dm_private.profiles AS p ON p.team_id = e.team_id AND p.profile_id = e.owner_profile_id "
        "WHERE e.team_id = %s ORDER BY e.sequence_number",
        (loaded[0].team_id,),
    ).fetchall()
    assert [row[0] for row in rows] == [turn.dia_id for turn in conversations[0].turns]
    assert [row[1] for row in rows] == [turn.speaker for turn in conversations[0].turns]
