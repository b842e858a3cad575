"""LoCoMo: turn-level evidence recall, as the LoCoMo paper measures it (no LLM in the loop).

Each conversation becomes its own team; each turn becomes one evidence row
whose source external_id is the turn's `dia_id` (e.g. ``D3:12``), written by a
profile named after the speaker, with the session's ``date_time`` as
``created_at`` and ``valid_from``. Each speaker is also an entity. Every QA
question is asked through ``dm.recall_memory`` under its conversation's team
with the clock (``request.now``) at the conversation's end.

Evidence labels in the published file are not all well formed. They are
normalised, or dropped and counted (see `normalise_evidence`):

- ``"D8:6; D9:17"``: several IDs in one string are split;
- ``"D:11:26"``, ``"d3 : 4"``, ``"D3:04"``: stray separators, spaces, case and
  leading zeros are normalised to ``D11:26``, ``D3:4``;
- ``"D"``: no turn number, dropped as malformed;
- ``"D10:19"`` when the conversation has no such turn: dropped as unknown.

A question left without any evidence turn cannot be scored and is counted as
unscorable.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from densemem.eval import runner

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

# The clock of every question: the start of the conversation's last session
# plus this margin, so the last session's turns are strictly in the past.
CLOCK_MARGIN = timedelta(hours=1)
# How turns are written: 1 = each speaker's turns in one call; 2 = conversation order (runs of one
# speaker), so sequence numbers follow the conversation. Part of the team fingerprint.
INGEST_LAYOUT = 2

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"^D\s*:?\s*(\d+)\s*:\s*(\d+)$", re.IGNORECASE)
_SPLIT = re.compile(r"[;,]|\s{2,}|\s+(?=D)", re.IGNORECASE)
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    said_at: datetime


@dataclass(frozen=True)
class Question:
    qid: str
    conversation: str
    question: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class NormalisationReport:
    """How the evidence labels were cleaned; every raw label lands in exactly one bucket."""

    raw_labels: int = 0
    kept: int = 0
    normalised: int = 0
    split_labels: int = 0
    dropped_malformed: list[str] = field(default_factory=list)
    dropped_unknown: list[str] = field(default_factory=list)
    unscorable_questions: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "raw_labels": self.raw_labels,
            "kept": self.kept,
            "normalised": self.normalised,
            "split_labels": self.split_labels,
            "dropped_malformed": len(self.dropped_malformed),
            "dropped_unknown": len(self.dropped_unknown),
            "dropped_examples": sorted(set(self.dropped_malformed + self.dropped_unknown))[:20],
            "unscorable_questions": self.unscorable_questions,
        }


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, ...]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    @property
    def now(self) -> datetime:
        """The clock for this conversation's questions: just after its last session began."""
        return max(turn.said_at for turn in self.turns) + CLOCK_MARGIN

    def fingerprint(self) -> str:
        """A short hash of what is ingested, so a changed file never reuses an old team."""
        digest = hashlib.sha256()
        # The ingest layout is part of what is stored: layout 2 writes turns in conversation order.
        digest.update(f"layout {INGEST_LAYOUT}".encode())
        for turn in self.turns:
            digest.update(
                json.dumps([turn.dia_id, turn.speaker, turn.text, turn.said_at.isoformat()]).encode()
            )
        return digest.hexdigest()[:10]


def parse_session_time(value: str) -> datetime:
    """LoCoMo's ``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime."""
    cleaned = " ".join(value.replace("\u202f", " ").split())
    for date_format in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, date_format).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unrecognised LoCoMo session date_time: {value!r}")


def turn_text(turn: Mapping[str, Any]) -> str:
    """The evidence text of a turn: who said it, what was said, and a shared image's caption."""
    text = f"{turn['speaker']}: {str(turn.get('text', '')).strip()}"
    caption = turn.get("blip_caption")
    if caption:
        text += f" [shared an image: {str(caption).strip()}]"
    return text


def canonical_dia_id(label: str) -> str | None:
    """``D<session>:<turn>`` without stray separators, spaces, case or leading zeros; None if malformed."""
    match = _DIA_ID.match(label.strip())
    if match is None:
        return None
    return f"D{int(match.group(1))}:{int(match.group(2))}"


def normalise_evidence(
    raw: Sequence[Any], known_ids: Mapping[str, str], report: NormalisationReport
) -> tuple[str, ...]:
    """Clean one question's evidence labels against its conversation's turns (order kept, no repeats).

    `known_ids` maps the canonical form of each turn's dia_id to the dia_id as stored.
    """
    result: list[str] = []
    for label in raw:
        report.raw_labels += 1
        text = str(label).strip()
        pieces = [piece.strip() for piece in _SPLIT.split(text) if piece and piece.strip()]
        if len(pieces) > 1:
            report.split_labels += 1
        for piece in pieces or [text]:
            canonical = canonical_dia_id(piece)
            if canonical is None:
                report.dropped_malformed.append(text)
                continue
            dia_id = known_ids.get(canonical)
            if dia_id is None:
                report.dropped_unknown.append(text)
                continue
            if dia_id == text:
                report.kept += 1
            else:
                report.normalised += 1
            if dia_id not in result:
                result.append(dia_id)
    return tuple(result)


def parse_conversation(sample: Mapping[str, Any], report: NormalisationReport) -> Conversation:
    """One LoCoMo sample: its turns in session order and its scorable questions."""
    sample_id = str(sample["sample_id"])
    conversation = sample["conversation"]
    sessions = sorted(
        (int(match.group(1)), key)
        for key in conversation
        if (match := _SESSION_KEY.match(key)) and isinstance(conversation[key], list)
    )
    turns: list[Turn] = []
    for number, key in sessions:
        said_at = parse_session_time(str(conversation[f"{key}_date_time"]))
        for turn in conversation[key]:
            turns.append(
                Turn(
                    dia_id=str(turn["dia_id"]).strip(),
                    session=number,
                    speaker=str(turn["speaker"]).strip(),
                    text=turn_text(turn),
                    said_at=said_at,
                )
            )
    ids = [turn.dia_id for turn in turns]
    duplicates = [dia_id for dia_id, count in Counter(ids).items() if count > 1]
    if duplicates:
        raise ValueError(f"{sample_id}: repeated dia_id {duplicates[:5]}")
    known = {canonical_dia_id(dia_id) or dia_id: dia_id for dia_id in ids}
    questions: list[Question] = []
    for index, qa in enumerate(sample.get("qa", [])):
        qid = f"{sample_id}:q{index}"
        evidence = normalise_evidence(qa.get("evidence") or [], known, report)
        if not evidence:
            report.unscorable_questions.append(qid)
            continue
        questions.append(
            Question(
                qid=qid,
                conversation=sample_id,
                question=str(qa["question"]),
                category=int(qa["category"]),
                evidence=evidence,
            )
        )
    speakers = tuple(dict.fromkeys(turn.speaker for turn in turns))
    return Conversation(
        sample_id=sample_id, speakers=speakers, turns=tuple(turns), questions=tuple(questions)
    )


def load(path: Path) -> tuple[list[Conversation], NormalisationReport]:
    """Read a LoCoMo JSON file (a list of samples) and normalise its evidence labels."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of LoCoMo samples")
    report = NormalisationReport()
    conversations = [parse_conversation(sample, report) for sample in data]
    return conversations, report


def speaker_runs(conversation: Conversation) -> list[tuple[str, list[Turn]]]:
    """The turns in conversation order, cut into runs of one speaker (one ingest call each).

    Written in this order, the evidence rows' sequence numbers follow the
    conversation, as they would in a service that stores each turn when it is
    said; a stage that looks at neighbouring turns relies on it.
    """
    runs: list[tuple[str, list[Turn]]] = []
    for turn in conversation.turns:
        if runs and runs[-1][0] == turn.speaker:
            runs[-1][1].append(turn)
        else:
            runs.append((turn.speaker, [turn]))
    return runs


def evidence_items(
    conversation: Conversation, speaker: str, turns: Sequence[Turn] | None = None
) -> list[dict[str, Any]]:
    """The dm.ingest_evidence items of one speaker's turns (all of them, or the given run)."""
    items: list[dict[str, Any]] = []
    for turn in conversation.turns if turns is None else turns:
        if turn.speaker != speaker:
            continue
        items.append(
            {
                "text": turn.text,
                "source": {
                    "external_id": turn.dia_id,
                    "kind": "conversation_turn",
                    "title": f"{conversation.sample_id} session {turn.session}",
                    "source_group": f"session_{turn.session}",
                },
                "memory_type": "conversation",
                "created_at": turn.said_at.isoformat(),
                "valid_from": turn.said_at.isoformat(),
            }
        )
    return items


# ---------------------------------------------------------------- the run


def team_name(conversation: Conversation) -> str:
    """One team per conversation; the fingerprint keeps a changed file from reusing old rows."""
    return f"eval-locomo-{conversation.sample_id}-{conversation.fingerprint()}"


def category_group(category: int) -> str:
    return f"{category}:{CATEGORY_NAMES.get(category, 'unknown')}"


def dataset_slices(question: Question) -> tuple[str, ...]:
    """Slices the labels assign: temporal (category 2) and graph (multi-hop, category 1)."""
    found: list[str] = []
    if question.category == 2:
        found.append("temporal")
    if question.category == 1:
        found.append("graph")
    return tuple(found)


@dataclass(frozen=True)
class LoadedConversation:
    conversation: Conversation
    team_id: uuid.UUID
    reader_profile_id: uuid.UUID
    reused: bool


def load_into_database(
    conn: psycopg.Connection[Any], conversations: Sequence[Conversation], *, log: runner.Log = runner.quiet
) -> list[LoadedConversation]:
    """Create each conversation's team, speaker profiles and entities, and ingest its turns.

    Administrator calls (teams, profiles) run on the superuser connection; each
    speaker's turns are ingested as that speaker's profile through
    dm.ingest_evidence, the whole conversation in one transaction. A team
    already holding exactly this conversation's turns (same fingerprint) is
    reused; a half-loaded team is an error.
    """
    loaded: list[LoadedConversation] = []
    for conversation in conversations:
        team_id = runner.ensure_team(conn, team_name(conversation))
        profiles = {
            speaker: runner.ensure_profile(conn, team_id, speaker) for speaker in conversation.speakers
        }
        reader = runner.ensure_profile(conn, team_id, "evaluator")
        present = runner.evidence_count(conn, team_id)
        if present == len(conversation.turns):
            loaded.append(LoadedConversation(conversation, team_id, reader, True))
            log(f"reusing team {team_name(conversation)} ({present} turns)")
            continue
        if present != 0:
            raise RuntimeError(
                f"team {team_name(conversation)} holds {present} of {len(conversation.turns)} turns: "
                "use another database"
            )
        with conn.transaction():
            for speaker, profile_id in profiles.items():
                runner.upsert_entities(conn, team_id, profile_id, [{"name": speaker, "kind": "person"}])
            for speaker, run_turns in speaker_runs(conversation):
                runner.ingest(
                    conn, team_id, profiles[speaker], evidence_items(conversation, speaker, run_turns)
                )
        log(
            f"loaded {conversation.sample_id}: {len(conversation.turns)} turns into {team_name(conversation)}"
        )
        loaded.append(LoadedConversation(conversation, team_id, reader, False))
    return loaded


def eval_queries(loaded: Sequence[LoadedConversation]) -> list[runner.EvalQuery]:
    """Every scorable question, under its conversation's team, with the clock at the conversation's end."""
    queries: list[runner.EvalQuery] = []
    for item in loaded:
        now = item.conversation.now
        for question in item.conversation.questions:
            queries.append(
                runner.EvalQuery(
                    qid=question.qid,
                    team_id=item.team_id,
                    profile_id=item.reader_profile_id,
                    text=question.question,
                    gold={dia_id: 1.0 for dia_id in question.evidence},
                    group=category_group(question.category),
                    slices=dataset_slices(question),
                    now=now,
                )
            )
    return queries


def run(
    conn: psycopg.Connection[Any],
    path: Path,
    *,
    ks: Sequence[int],
    branches: Sequence[runner.Branch],
    embedding: runner.Embedding,
    extra_request: Mapping[str, Any] | None = None,
    log: runner.Log = runner.quiet,
) -> dict[str, Any]:
    """Load, embed, ask every question under every branch; the JSON report."""
    conversations, normalisation = load(path)
    loaded = load_into_database(conn, conversations, log=log)
    teams = [item.team_id for item in loaded]
    queries = eval_queries(loaded)
    report = runner.run_dataset(
        conn,
        dataset="locomo",
        teams=teams,
        queries=queries,
        branches=branches,
        embedding=embedding,
        depth=max(ks),
        ks=ks,
        extra_request=extra_request,
        log=log,
    )
    report["source"] = {"path": str(path), "sha256": runner.file_sha256(path)}
    report["teams"] = {item.conversation.sample_id: str(item.team_id) for item in loaded}
    report["clock"] = f"start of the conversation's last session + {CLOCK_MARGIN}"
    report["normalisation"] = normalisation.as_dict()
    report["turns"] = sum(len(item.conversation.turns) for item in loaded)
    return report
