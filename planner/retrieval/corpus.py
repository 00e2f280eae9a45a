"""A small corpus of company policy documents with access labels, kinds, languages, dates and judgments.

The project generates it (:func:`generate_corpus`, seeded) and ships the
result (``planner/retrieval/data/corpus.json``, :func:`load_corpus`); a test
checks that the shipped file is what the generator makes, so the two cannot
drift.

What it is made of
------------------
Sixteen policy topics (travel, remote work, parental leave, ...), each with
three *aspects* (travel: per diem, class of service, international trips),
and a vocabulary of topic words, aspect words and their synonyms. A query
asks about one aspect of one topic; a document is **relevant** to it iff it
is a substantive treatment of that aspect of that topic. Around the relevant
ones sit what makes ranking hard: documents on other aspects of the same
topic (they share the topic's words), passing mentions (announcements and
e-mails that use the aspect's words without settling anything), relevant
documents that use synonyms or are terse (they score low), and documents of
other topics. Eleven more aspects are ones no document covers (the right answer is
empty). Each aspect is asked in two phrasings.

Four sources (indexes), declared in this order (the traversal's tie order):

- ``policy_index``: policies, handbooks and FAQs; public or internal;
- ``archive_index``: memos, minutes and e-mails; internal or confidential,
  older; for a fifth of the aspects every substantive document is here and
  confidential (the caller without ``confidential.read`` has them withheld);
- ``partner_index``: an external provider's policies (travel agency,
  relocation firm, equipment leasing); it fails for some queries (declared
  ``failure_rate``);
- ``hr_index``: HR case notes; the source itself needs ``hr.read``.

Access labels and the entitlement each needs: ``public`` (none),
``internal`` (``staff``), ``confidential`` (``confidential.read``),
``restricted`` (``legal.restricted``). Languages: mostly ``en``, some ``de``
and ``fr`` (their own filler words around the shared technical terms). Dates
run from 2014 to the snapshot date ``as_of`` (2026-06-30), the default
decision date.

Queries carry the reader's filters (allowed kinds, languages, a maximum age in
days) and a split: two thirds ``calibration`` (their judgments fit the
calibrators), one third ``test`` (the frontier is measured on them), split by
aspect so that a test query never shares its relevant documents with a
calibration query.
"""

from __future__ import annotations

import datetime as _dt
import re
from importlib import resources

import attrs
import numpy as np

from planner.retrieval.errors import CorpusError
from planner.io.jsonfile import read_json

__all__ = ["Document", "Query", "SourceSpec", "Corpus", "generate_corpus", "load_corpus", "read_corpus",
           "CORPUS_SEED", "LABELS", "SPLITS", "tokenize", "STOPWORDS"]

#: The seed of the shipped corpus.
CORPUS_SEED = 13
#: Access label -> the entitlement a caller needs to see documents carrying it (None: anyone).
LABELS = {"public": None, "internal": "staff", "confidential": "confidential.read", "restricted": "legal.restricted"}
SPLITS = ("calibration", "test")
MAX_CORPUS_BYTES = 32 * 2**20

#: Words the tokenizer drops (English, German and French function words of the generated text).
STOPWORDS = frozenset("""
a an and are as at be by can do does for from how i if in is it its may must of on or our please should
that the their this to was we what when which who will with within you your also any all been has have
not per than then there these they those under up us what's where whether would der die das und ist fur
mit von zu den im ein eine le la les des et est pour du en un une dans sur
""".split())
_WORD = re.compile(r"[a-z0-9\u00c0-\u024f][a-z0-9\u00c0-\u024f-]+")


def tokenize(text: str) -> list:
    """Lower-case words of two characters or more, stopwords dropped: what BM25 indexes and queries.

    >>> tokenize("What is the per-diem for International trips?")
    ['per-diem', 'international', 'trips']
    """
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


# --------------------------------------------------------------------------
# the value classes


def _name(instance, attribute, value):
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9_.:-]{1,80}", value):
        raise CorpusError(f"{attribute.name}: not a valid name: {str(value)[:60]!r}")


@attrs.frozen(kw_only=True)
class Document:
    """One document of one source, with what the gates read.

    Attributes
    ----------
    id, source : str
    text : str
    label : str
        Access label (a key of :data:`LABELS`).
    kind : str
        policy, handbook, faq, memo, minutes, email, announcement, vendor_policy, case_note.
    language : str
    date : datetime.date
    """

    id: str = attrs.field(validator=_name)
    source: str = attrs.field(validator=_name)
    text: str = attrs.field(validator=attrs.validators.instance_of(str))
    label: str = attrs.field(validator=attrs.validators.in_(tuple(LABELS)))
    kind: str = attrs.field(validator=_name)
    language: str = attrs.field(validator=_name)
    date: _dt.date = attrs.field(validator=attrs.validators.instance_of(_dt.date))

    @property
    def entitlement(self) -> str | None:
        """The entitlement a reader needs (what :func:`planner.session.redact.may_see` reads)."""
        return LABELS[self.label]

    @property
    def tokens(self) -> int:
        """Its length in tokens (what scoring and the context budget count)."""
        return len(self.text.split())

    def to_json(self) -> dict:
        return {"id": self.id, "source": self.source, "label": self.label, "kind": self.kind,
                "language": self.language, "date": self.date.isoformat(), "text": self.text}


@attrs.frozen(kw_only=True)
class Query:
    """A query with the reader's filters, its split and its relevance judgments.

    Attributes
    ----------
    id, text : str
    split : str
        ``calibration`` or ``test``.
    kinds, languages : tuple of str or None
        The kinds and languages the reader accepts (None: any).
    max_age_days : int or None
        Older documents are stale for this reader.
    relevant : frozenset of str
        The documents judged relevant (empty: nothing in the corpus answers it).
    topic, aspect : str
        What it asks about (the generator's labels, for strata and studies).
    """

    id: str = attrs.field(validator=_name)
    text: str = attrs.field(validator=attrs.validators.instance_of(str))
    split: str = attrs.field(validator=attrs.validators.in_(SPLITS))
    kinds: tuple | None = None
    languages: tuple | None = None
    max_age_days: int | None = None
    relevant: frozenset = attrs.field(default=frozenset(), converter=frozenset)
    topic: str = ""
    aspect: str = ""

    def to_json(self) -> dict:
        return {"id": self.id, "text": self.text, "split": self.split,
                "kinds": list(self.kinds) if self.kinds is not None else None,
                "languages": list(self.languages) if self.languages is not None else None,
                "max_age_days": self.max_age_days, "relevant": sorted(self.relevant),
                "topic": self.topic, "aspect": self.aspect}


@attrs.frozen(kw_only=True)
class SourceSpec:
    """A source (index) and what admits it: the gate vocabulary of observations, at the source level.

    Attributes
    ----------
    name : str
    entitlement : str or None
        Needed to query the source at all (``permission denied`` otherwise).
    purposes : tuple of str or None
        The purposes it serves (``purpose mismatch`` otherwise; None: any).
    page_size : int
        Candidates per page the provider returns.
    page_ms : float
        Modelled latency of one page.
    failure_rate : float
        Declared probability that the provider is unavailable for a query
        (the frontier draws outages with it, seeded).
    """

    name: str = attrs.field(validator=_name)
    entitlement: str | None = None
    purposes: tuple | None = None
    page_size: int = 10
    page_ms: float = 20.0
    failure_rate: float = 0.0

    def to_json(self) -> dict:
        return {"name": self.name, "entitlement": self.entitlement,
                "purposes": list(self.purposes) if self.purposes is not None else None,
                "page_size": self.page_size, "page_ms": self.page_ms, "failure_rate": self.failure_rate}


@attrs.frozen(kw_only=True, eq=False)
class Corpus:
    """Documents, queries and sources, with lookups.

    >>> c = load_corpus()
    >>> len(c.sources), c.as_of.isoformat(), c.query("q001").split
    (4, '2026-06-30', 'calibration')
    """

    seed: int
    as_of: _dt.date
    sources: tuple
    documents: tuple
    queries: tuple
    _docs: dict = attrs.field(init=False, repr=False)
    _queries: dict = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self):
        docs = {}
        names = {s.name for s in self.sources}
        for d in self.documents:
            if d.id in docs:
                raise CorpusError(f"documents: {d.id!r} twice")
            if d.source not in names:
                raise CorpusError(f"documents.{d.id}: unknown source {d.source!r}")
            docs[d.id] = d
        qs = {}
        for q in self.queries:
            if q.id in qs:
                raise CorpusError(f"queries: {q.id!r} twice")
            unknown = sorted(q.relevant - set(docs))
            if unknown:
                raise CorpusError(f"queries.{q.id}.relevant: unknown document {unknown[0]!r}")
            qs[q.id] = q
        object.__setattr__(self, "_docs", docs)
        object.__setattr__(self, "_queries", qs)

    def document(self, doc_id: str) -> Document:
        try:
            return self._docs[doc_id]
        except KeyError:
            raise CorpusError(f"unknown document {doc_id!r}"[:120]) from None

    def query(self, query_id: str) -> Query:
        """The query of that id (one line naming a few known ids when there is none)."""
        try:
            return self._queries[query_id]
        except KeyError:
            ids = [q.id for q in self.queries]
            raise CorpusError(f"unknown query {str(query_id)[:40]!r} (the corpus has {len(ids)}: "
                              f"{ids[0]} ... {ids[-1]})") from None

    def source(self, name: str) -> SourceSpec:
        for s in self.sources:
            if s.name == name:
                return s
        raise CorpusError(f"unknown source {str(name)[:40]!r} (sources: {', '.join(s.name for s in self.sources)})")

    def in_source(self, name: str) -> tuple:
        """The documents of one source, in corpus order."""
        return tuple(d for d in self.documents if d.source == name)

    def split(self, name: str) -> tuple:
        return tuple(q for q in self.queries if q.split == name)

    def to_json(self) -> dict:
        return {"schema": "planner.corpus", "schema_version": 1, "seed": self.seed,
                "as_of": self.as_of.isoformat(), "labels": dict(LABELS),
                "sources": [s.to_json() for s in self.sources],
                "queries": [q.to_json() for q in self.queries],
                "documents": [d.to_json() for d in self.documents]}

    @classmethod
    def from_json(cls, data) -> "Corpus":
        """A corpus from its JSON form, every field checked (one-line :class:`CorpusError`)."""
        if not isinstance(data, dict) or data.get("schema") != "planner.corpus" or data.get("schema_version") != 1:
            raise CorpusError("not a corpus file (schema planner.corpus, version 1)")
        try:
            sources = tuple(SourceSpec(name=s["name"], entitlement=s["entitlement"],
                                       purposes=tuple(s["purposes"]) if s["purposes"] is not None else None,
                                       page_size=int(s["page_size"]), page_ms=float(s["page_ms"]),
                                       failure_rate=float(s["failure_rate"])) for s in data["sources"])
            docs = tuple(Document(id=d["id"], source=d["source"], text=d["text"], label=d["label"], kind=d["kind"],
                                  language=d["language"], date=_dt.date.fromisoformat(d["date"]))
                         for d in data["documents"])
            queries = tuple(Query(id=q["id"], text=q["text"], split=q["split"],
                                  kinds=tuple(q["kinds"]) if q["kinds"] is not None else None,
                                  languages=tuple(q["languages"]) if q["languages"] is not None else None,
                                  max_age_days=q["max_age_days"], relevant=q["relevant"], topic=q["topic"],
                                  aspect=q["aspect"]) for q in data["queries"])
            return cls(seed=int(data["seed"]), as_of=_dt.date.fromisoformat(data["as_of"]), sources=sources,
                       documents=docs, queries=queries)
        except CorpusError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CorpusError(f"malformed corpus: {type(e).__name__}: {str(e)[:100]}") from None


def read_corpus(path) -> Corpus:
    """A corpus file (JSON), refused in one line when it is missing, too large or malformed."""
    return Corpus.from_json(read_json(path, limit=MAX_CORPUS_BYTES, error=CorpusError, what="corpus"))


def load_corpus() -> Corpus:
    """The shipped corpus (``planner/retrieval/data/corpus.json``)."""
    return read_corpus(resources.files("planner.retrieval") / "data" / "corpus.json")


# --------------------------------------------------------------------------
# the generator

# topic: (topic words, {aspect: (aspect words, synonyms)})
_TOPICS = {
    "travel": (["travel", "trip", "flight", "hotel", "booking"], {
        "per_diem": (["per-diem", "daily", "allowance", "meals"], ["subsistence", "food"]),
        "class_of_service": (["business", "economy", "class", "cabin"], ["seat", "upgrade"]),
        "international": (["international", "visa", "passport", "abroad"], ["foreign", "overseas"])}),
    "remote_work": (["remote", "home", "hybrid", "telework", "working"], {
        "stipend": (["stipend", "equipment", "internet", "reimbursement"], ["budget", "furniture"]),
        "schedule": (["schedule", "core", "hours", "attendance"], ["timetable", "presence"]),
        "abroad": (["abroad", "country", "tax", "residency"], ["foreign", "jurisdiction"])}),
    "parental_leave": (["parental", "leave", "parent", "child", "baby"], {
        "duration": (["weeks", "duration", "paid", "months"], ["length", "entitlement"]),
        "adoption": (["adoption", "adoptive", "foster", "placement"], ["guardian", "custody"]),
        "return": (["return", "phased", "part-time", "reintegration"], ["comeback", "nursing"])}),
    "data_retention": (["data", "retention", "records", "storage", "archive"], {
        "email": (["email", "mailbox", "messages", "deletion"], ["inbox", "purge"]),
        "customer": (["customer", "personal", "gdpr", "erasure"], ["client", "subject"]),
        "backups": (["backup", "tape", "snapshot", "restore"], ["replica", "offsite"])}),
    "passwords": (["password", "credential", "authentication", "login", "account"], {
        "rotation": (["rotation", "expiry", "change", "reuse"], ["renewal", "lifetime"]),
        "mfa": (["mfa", "factor", "authenticator", "otp"], ["two-step", "token"]),
        "sharing": (["sharing", "shared", "vault", "disclose"], ["handover", "secret"])}),
    "procurement": (["procurement", "purchase", "vendor", "supplier", "order"], {
        "approval_limits": (["approval", "limit", "threshold", "sign-off"], ["ceiling", "authority"]),
        "tenders": (["tender", "bid", "quotes", "competitive"], ["rfp", "bidding"]),
        "vetting": (["vetting", "due", "diligence", "registration"], ["screening", "kyc"])}),
    "gifts": (["gift", "hospitality", "entertainment", "offer", "accept"], {
        "value_limits": (["value", "nominal", "euro", "maximum"], ["worth", "price"]),
        "register": (["register", "declare", "disclosure", "log"], ["report", "record"]),
        "officials": (["official", "government", "bribery", "anti-corruption"], ["public", "minister"])}),
    "overtime": (["overtime", "extra", "pay", "compensation", "shift"], {
        "rates": (["rate", "premium", "multiplier", "weekend"], ["night", "surcharge"]),
        "approval": (["approval", "manager", "preapproval", "authorise"], ["consent", "request"]),
        "time_off": (["lieu", "time-off", "toil", "balance"], ["compensatory", "carry-over"])}),
    "relocation": (["relocation", "move", "transfer", "assignment", "expatriate"], {
        "allowance": (["allowance", "lump", "sum", "moving"], ["payment", "costs"]),
        "housing": (["housing", "temporary", "accommodation", "rent"], ["apartment", "lodging"]),
        "family": (["family", "spouse", "schooling", "dependants"], ["partner", "children"])}),
    "incidents": (["incident", "security", "breach", "response", "reporting"], {
        "deadlines": (["deadline", "notify", "hours", "timeline"], ["promptly", "delay"]),
        "contacts": (["contact", "hotline", "soc", "escalation"], ["desk", "on-call"]),
        "phishing": (["phishing", "suspicious", "link", "attachment"], ["spoofed", "scam"])}),
    "conferences": (["conference", "event", "training", "attendance", "external"], {
        "budget": (["budget", "fee", "registration", "annual"], ["cost", "spend"]),
        "speaking": (["speaking", "talk", "slides", "presentation"], ["keynote", "panel"]),
        "certification": (["certification", "exam", "course", "credit"], ["qualification", "learning"])}),
    "equipment": (["equipment", "laptop", "device", "asset", "hardware"], {
        "return": (["return", "leaving", "offboarding", "courier"], ["collect", "handback"]),
        "loss": (["lost", "stolen", "theft", "damage"], ["missing", "broken"]),
        "personal": (["personal", "byod", "phone", "enrol"], ["private", "mobile"])}),
    "whistleblowing": (["whistleblowing", "concern", "misconduct", "speak-up", "wrongdoing"], {
        "anonymity": (["anonymous", "anonymity", "identity", "protect"], ["unnamed", "discreet"]),
        "channels": (["channel", "ombudsperson", "portal", "external"], ["mailbox", "line"]),
        "retaliation": (["retaliation", "victimisation", "dismissal", "safeguard"], ["reprisal", "punishment"])}),
    "background": (["background", "screening", "check", "candidate", "hiring"], {
        "criminal": (["criminal", "conviction", "certificate", "offence"], ["police", "record"]),
        "credit": (["credit", "financial", "bankruptcy", "debt"], ["solvency", "insolvency"]),
        "references": (["reference", "referee", "employer", "verification"], ["previous", "former"])}),
    "expenses": (["expense", "claim", "receipt", "reimbursement", "finance"], {
        "deadlines": (["submit", "deadline", "month", "late"], ["overdue", "cut-off"]),
        "receipts": (["original", "scan", "itemised", "missing"], ["invoice", "proof"]),
        "corporate_card": (["card", "corporate", "statement", "misuse"], ["amex", "company-card"])}),
    "workplace": (["workplace", "desk", "premises", "building", "site"], {
        "clean_desk": (["clean", "lock", "papers", "screen"], ["tidy", "shred"]),
        "visitors": (["visitor", "badge", "escort", "sign-in"], ["guest", "reception"]),
        "pets": (["pet", "dog", "animal", "allergy"], ["cat", "companion"])}),
}

# aspects no document covers: (topic, name, words)
_ABSENT = [
    ("travel", "rail_passes", ["rail", "pass", "season", "commuter"]),
    ("remote_work", "coworking", ["coworking", "membership", "hub", "space"]),
    ("parental_leave", "sabbatical", ["sabbatical", "unpaid", "career", "break"]),
    ("data_retention", "paper", ["paper", "shredding", "physical", "files"]),
    ("passwords", "biometrics", ["biometric", "fingerprint", "face", "scan"]),
    ("procurement", "sustainability", ["sustainable", "green", "carbon", "sourcing"]),
    ("gifts", "lottery", ["lottery", "raffle", "prize", "draw"]),
    ("equipment", "monitors", ["monitor", "second", "screen", "ergonomic"]),
    ("conferences", "sponsorship", ["sponsorship", "booth", "exhibitor", "stand"]),
    ("workplace", "parking", ["parking", "car", "space", "garage"]),
    ("expenses", "mileage", ["mileage", "kilometre", "private", "car"]),
]

_FILLER = {
    "en": ("policy employee employees company staff manager applies process section guideline required note "
           "information department approved team ensure responsible following general rules procedure update "
           "effective scope case questions contact details apply eligible period standard form review").split(),
    "de": ("richtlinie mitarbeiter unternehmen abteilung regelung gilt verfahren hinweis zustandig genehmigt "
           "bereich informationen anwendung frist formular prufung standard").split(),
    "fr": ("politique employes entreprise service regle applique procedure note responsable approuve "
           "informations champ delai formulaire examen standard").split(),
}

_QUERY_TEMPLATES = ["what is the policy on {a} for {t}", "{t} {a} rules", "how does {t} {a} work",
                    "{a} {t} guideline", "question about {t} and {a}"]

_SOURCES = (
    SourceSpec(name="policy_index", page_size=10, page_ms=20.0),
    SourceSpec(name="archive_index", page_size=10, page_ms=60.0),
    SourceSpec(name="partner_index", page_size=10, page_ms=120.0, failure_rate=0.2),
    SourceSpec(name="hr_index", entitlement="hr.read", page_size=10, page_ms=40.0),
)
_PARTNER_TOPICS = ("travel", "relocation", "equipment", "conferences")
_HR_TOPICS = ("parental_leave", "overtime", "background", "whistleblowing", "relocation")


class _Writer:
    """Draws words and metadata from one seeded generator, in a fixed order."""

    def __init__(self, seed: int, as_of: _dt.date):
        self.rng = np.random.default_rng(seed)
        self.as_of = as_of

    def pick(self, seq, k=1):
        idx = self.rng.choice(len(seq), size=min(k, len(seq)), replace=False)
        return [seq[i] for i in sorted(idx)]

    def words(self, seq, n):
        return [seq[i] for i in self.rng.integers(0, len(seq), size=n)]

    def language(self):
        u = self.rng.random()
        return "en" if u < 0.88 else ("de" if u < 0.96 else "fr")

    def date(self, start_year, end_year=None):
        end = self.as_of if end_year is None else _dt.date(end_year, 12, 31)
        start = _dt.date(start_year, 1, 1)
        return start + _dt.timedelta(days=int(self.rng.integers(0, (end - start).days + 1)))

    def text(self, parts, language, filler_n):
        words = list(parts) + self.words(_FILLER[language], filler_n)
        self.rng.shuffle(words)
        return " ".join(words)


def generate_corpus(seed: int = CORPUS_SEED) -> Corpus:
    """Generate the corpus (deterministic for a seed; the shipped one is ``generate_corpus(13)``).

    >>> c = generate_corpus()
    >>> len(c.documents) > 300, len(c.split("calibration")), len(c.split("test"))
    (True, 80, 38)
    """
    as_of = _dt.date(2026, 6, 30)
    w = _Writer(seed, as_of)
    docs, queries = [], []
    counter = {"n": 0}

    def add(source, text, label, kind, language, date):
        counter["n"] += 1
        d = Document(id=f"{source.split('_')[0]}-{counter['n']:04d}", source=source, text=text, label=label,
                     kind=kind, language=language, date=date)
        docs.append(d)
        return d.id

    topics = list(_TOPICS)
    # a quarter of the aspects keep every substantive treatment in the confidential archive
    all_aspects = [(t, a) for t in topics for a in _TOPICS[t][1]]
    restricted = set(w.pick(all_aspects, k=len(all_aspects) // 4))
    relevant = {}
    for t in topics:
        t_words, aspects = _TOPICS[t]
        others = [x for x in topics if x != t]
        for a, (a_words, a_syn) in aspects.items():
            rel = []
            closed = (t, a) in restricted
            n_sub = int(w.rng.integers(3, 7))
            for i in range(n_sub):
                lang = w.language()
                style = w.rng.random()
                if style < 0.2:    # uses synonyms: relevant, scores low
                    parts = w.words(t_words, 2) + w.words(a_syn, 3) + w.words(a_words, 1)
                elif style < 0.35:  # terse
                    parts = w.words(t_words, 1) + w.words(a_words, 2)
                else:
                    parts = w.words(t_words, int(w.rng.integers(2, 5))) + w.words(a_words, int(w.rng.integers(3, 7))) \
                        + w.words(a_syn, int(w.rng.integers(0, 2)))
                if closed or (w.rng.random() < 0.25):
                    source, kind = "archive_index", str(w.pick(["memo", "minutes", "email"])[0])
                    label = "confidential" if closed or w.rng.random() < 0.5 else "internal"
                    date = w.date(2014)
                else:
                    source, kind = "policy_index", str(w.pick(["policy", "handbook", "faq"])[0])
                    label = "public" if w.rng.random() < 0.6 else "internal"
                    date = w.date(2017)
                rel.append(add(source, w.text(parts, lang, int(w.rng.integers(15, 45))), label, kind, lang, date))
            if t in _PARTNER_TOPICS:
                for i in range(int(w.rng.integers(1, 4))):
                    parts = w.words(t_words, int(w.rng.integers(1, 4))) + w.words(a_words, int(w.rng.integers(2, 5)))
                    rel.append(add("partner_index", w.text(parts, "en", int(w.rng.integers(20, 40))),
                                   str(w.pick(["public", "internal"])[0]), "vendor_policy", "en", w.date(2020)))
            if t in _HR_TOPICS:
                for i in range(int(w.rng.integers(1, 4))):
                    parts = w.words(t_words, int(w.rng.integers(1, 3))) + w.words(a_words, int(w.rng.integers(2, 4)))
                    rel.append(add("hr_index", w.text(parts, "en", int(w.rng.integers(20, 40))),
                                   str(w.pick(["confidential", "restricted"])[0]), "case_note", "en", w.date(2018)))
            # passing mentions: the aspect's words, nothing settled (hard negatives)
            for i in range(int(w.rng.integers(1, 4))):
                parts = w.words(t_words, 1) + w.words(a_words, int(w.rng.integers(1, 3)))
                source = "policy_index" if w.rng.random() < 0.5 else "archive_index"
                kind = "announcement" if source == "policy_index" else "email"
                label = "public" if source == "policy_index" else str(w.pick(["internal", "confidential"])[0])
                lang = w.language()
                add(source, w.text(parts, lang, int(w.rng.integers(10, 30))), label, kind, lang, w.date(2016))
            relevant[(t, a)] = rel
        # documents of the topic in general, and ones that mix in another topic
        for i in range(int(w.rng.integers(2, 5))):
            o = others[int(w.rng.integers(0, len(others)))]
            parts = w.words(t_words, 3) + w.words(_TOPICS[o][0], int(w.rng.integers(0, 3)))
            lang = w.language()
            add("policy_index", w.text(parts, lang, int(w.rng.integers(20, 50))),
                str(w.pick(["public", "internal"])[0]), "policy", lang, w.date(2015))
        # the side sources' own documents on the topic that settle nothing
        for source, kind, labels, on in (("partner_index", "vendor_policy", ["public", "internal"], _PARTNER_TOPICS),
                                         ("hr_index", "case_note", ["confidential", "restricted"], _HR_TOPICS)):
            if t in on:
                for i in range(int(w.rng.integers(2, 4))):
                    a_any = list(_TOPICS[t][1].values())[int(w.rng.integers(0, 3))][0]
                    parts = w.words(t_words, 2) + w.words(a_any, 1)
                    add(source, w.text(parts, "en", int(w.rng.integers(20, 40))), str(w.pick(labels)[0]), kind,
                        "en", w.date(2018))
    # queries: one per aspect, then the aspects nobody covers
    specs = []
    for t in topics:
        for a, (a_words, _) in _TOPICS[t][1].items():
            specs.append((t, a, a_words, relevant[(t, a)]))
    for t, a, a_words in _ABSENT:
        specs.append((t, a, a_words, []))
    order = w.rng.permutation(len(specs))
    n = 0
    for k, i in enumerate(order):
        t, a, a_words, rel = specs[i]
        split = "test" if k % 3 == 2 else "calibration"  # by aspect: both phrasings of one aspect in one split
        for phrasing in range(2):
            tmpl = _QUERY_TEMPLATES[int(w.rng.integers(0, len(_QUERY_TEMPLATES)))]
            text = tmpl.format(a=" ".join(w.pick(a_words, 2)), t=" ".join(w.pick(_TOPICS[t][0], 1)))
            kinds = ("policy", "handbook", "faq", "memo", "minutes", "vendor_policy") if w.rng.random() < 0.25 else None
            languages = ("en",) if w.rng.random() < 0.5 else ("en", "de")
            max_age = 3650 if w.rng.random() < 0.35 else None
            n += 1
            queries.append(Query(id=f"q{n:03d}", text=text, split=split, kinds=kinds, languages=languages,
                                 max_age_days=max_age, relevant=frozenset(rel), topic=t, aspect=a))
    return Corpus(seed=seed, as_of=as_of, sources=_SOURCES, documents=tuple(docs), queries=tuple(queries))
