"""The shipped corpus: what the generator makes, lookups, and malformed files."""

from __future__ import annotations

import json

import pytest

from planner.retrieval.corpus import LABELS, generate_corpus, load_corpus, read_corpus, tokenize
from planner.retrieval.errors import CorpusError


def test_the_shipped_corpus_is_what_the_generator_makes():
    assert load_corpus().to_json() == generate_corpus(13).to_json()


def test_the_corpus_has_what_the_gates_and_the_studies_need():
    c = load_corpus()
    labels = {d.label for d in c.documents}
    assert labels == set(LABELS)
    assert {d.language for d in c.documents} == {"en", "de", "fr"}
    assert [s.name for s in c.sources] == ["policy_index", "archive_index", "partner_index", "hr_index"]
    assert c.source("hr_index").entitlement == "hr.read" and c.source("partner_index").failure_rate > 0
    cal, test = c.split("calibration"), c.split("test")
    assert len(cal) == 80 and len(test) == 38
    # split by aspect: no test query shares its relevant documents with a calibration query
    cal_docs = set().union(*(q.relevant for q in cal))
    assert not any(q.relevant & cal_docs for q in test)
    assert sum(1 for q in c.queries if not q.relevant) >= 20  # questions nothing answers


def test_unknown_ids_are_one_line_errors():
    c = load_corpus()
    with pytest.raises(CorpusError, match=r"unknown query 'q999' \(the corpus has 118: q001 \.\.\. q118\)"):
        c.query("q999")
    with pytest.raises(CorpusError, match="unknown source"):
        c.source("nope")
    with pytest.raises(CorpusError, match="unknown document"):
        c.document("nope")


def test_malformed_corpus_files_are_refused(tmp_path):
    p = tmp_path / "c.json"
    with pytest.raises(CorpusError, match="no such file"):
        read_corpus(p)
    p.write_text("{not json")
    with pytest.raises(CorpusError, match="JSON syntax error"):
        read_corpus(p)
    p.write_text("[]")
    with pytest.raises(CorpusError, match="not a corpus file"):
        read_corpus(p)
    # what Python's parser would take silently: a repeated key (the last one wins), 1e999 (infinity)
    text = json.dumps(load_corpus().to_json())
    p.write_text(text.replace('{"', '{"queries": [], "', 1))
    with pytest.raises(CorpusError, match="duplicate key 'queries' in one object"):
        read_corpus(p)
    p.write_text('{"x": 1e999}')
    with pytest.raises(CorpusError, match="the number 1e999 is out of range"):
        read_corpus(p)
    data = load_corpus().to_json()
    data["documents"][0]["label"] = "top_secret"
    p.write_text(json.dumps(data))
    with pytest.raises(CorpusError):
        read_corpus(p)
    data = load_corpus().to_json()
    data["queries"][0]["relevant"] = ["ghost"]
    p.write_text(json.dumps(data))
    with pytest.raises(CorpusError, match="unknown document 'ghost'"):
        read_corpus(p)


def test_tokenize_drops_stopwords_and_keeps_hyphenated_words():
    assert tokenize("The per-diem for a Trip, and the HOTEL!") == ["per-diem", "trip", "hotel"]
