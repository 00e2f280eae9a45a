"""The domain: what a domain file says, validated, names still names.

Build one with :meth:`Domain.from_dict` (parsed data), :meth:`Domain.from_file`
or :func:`load_domain` (a path, or the bare name of a shipped domain such as
``payment_release``). :mod:`planner.io.loader` does the checking;
:mod:`planner.compile` turns a domain into arrays.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import attrs

from planner.errors import DomainError
from planner.io.loader import domain_fields, read_domain_file
from planner.model.parts import Observation, Proposition

__all__ = ["Domain", "load_domain", "resolve_domain_path", "shipped_domains", "DOMAINS"]

#: The example domains shipped inside the package (``planner/domains``; also
#: ``domains/`` at the top of the repository).
DOMAINS = Path(str(resources.files("planner").joinpath("domains")))

_SUFFIXES = (".yaml", ".yml", ".json")


@attrs.frozen(kw_only=True)
class Domain:
    """A validated domain, names still names.

    Mappings are tuples of pairs in file order (the tie-break order). `raw`
    keeps the parsed file, which the independent audit (:mod:`planner.evaluation.audit`)
    reads instead of these fields; `content_hash` identifies the file's data.
    """

    name: str
    description: str = ""
    purpose: str | None = None
    propositions: tuple = attrs.field(converter=tuple)
    prior: object  # planner.model.parts.Prior
    actions: tuple = attrs.field(converter=tuple)
    budget: object  # planner.model.parts.Budget
    observations: tuple = attrs.field(converter=tuple, default=())
    max_age_minutes: float | None = None
    checks: tuple = attrs.field(converter=tuple, default=())
    content_hash: str = ""
    calibration: object = None  # planner.model.parts.Calibration, or None
    raw: object = attrs.field(default=None, eq=False, repr=False)

    @classmethod
    def from_dict(cls, data) -> "Domain":
        """Build a validated domain from a parsed domain file.

        Raises :class:`planner.errors.DomainError` naming the path of the
        first problem.

        >>> d = Domain.from_dict({
        ...     "domain": "tiny",
        ...     "world": {"x": {"values": ["a", "b"]}},
        ...     "prior": {"x": {"a": 0.5, "b": 0.5}},
        ...     "actions": {"go": {"loss": 1}},
        ... })
        >>> d.name, [p.name for p in d.propositions]
        ('tiny', ['x'])
        """
        return cls(**domain_fields(data))

    @classmethod
    def from_file(cls, path) -> "Domain":
        """Read, validate and build a domain from a YAML or JSON file (``.json`` is read as JSON)."""
        return cls.from_dict(read_domain_file(path))

    @property
    def calibration_id(self) -> str | None:
        """The calibration's identity (``cal:...``), or None for a domain that was not calibrated."""
        return None if self.calibration is None else self.calibration.id

    def observation(self, name: str) -> Observation:
        """The observation called `name` (KeyError if there is none)."""
        for o in self.observations:
            if o.name == name:
                return o
        raise KeyError(name)

    def proposition(self, name: str) -> Proposition:
        """The proposition called `name` (KeyError if there is none)."""
        for p in self.propositions:
            if p.name == name:
                return p
        raise KeyError(name)


def shipped_domains() -> list:
    """The names of the domains shipped with the package, sorted.

    >>> "payment_release" in shipped_domains()
    True
    """
    return sorted(p.stem for p in DOMAINS.iterdir() if p.suffix in _SUFFIXES)


def _bare(path: Path) -> bool:
    """A bare name: one part, no known suffix (``payment_release``)."""
    return len(path.parts) == 1 and path.suffix not in _SUFFIXES


def resolve_domain_path(arg) -> Path:
    """The file a domain argument names: a path that exists, else a shipped domain's bare name.

    ``payment_release`` (no folder, no suffix) names ``DOMAINS/payment_release.yaml``
    when no file of that name exists in the working directory.

    >>> resolve_domain_path("payment_release").name
    'payment_release.yaml'
    """
    path = Path(arg)
    if path.exists():
        return path
    if _bare(path):
        for suffix in _SUFFIXES:
            candidate = DOMAINS / f"{path.name}{suffix}"
            if candidate.is_file():
                return candidate
    return path


def load_domain(path) -> Domain:
    """Read, validate and build a domain from a file, or a shipped domain by its bare name.

    Parameters
    ----------
    path : str or pathlib.Path
        The domain file (``.json`` is read as JSON, anything else as YAML), or
        the name of a shipped domain (:func:`shipped_domains`).

    Returns
    -------
    Domain

    Raises
    ------
    planner.errors.DomainError
        One line naming the path in the file and what is wrong.

    Examples
    --------
    >>> d = load_domain("payment_release")
    >>> [o.name for o in d.observations]
    ['approval_registry', 'manager_message', 'stale_approval_pdf', 'mailbox_sweep']
    """
    resolved = resolve_domain_path(path)
    if not resolved.exists() and _bare(Path(path)):
        raise DomainError("(file)", f"no such file: {path} (nor a shipped domain; shipped: "
                                    f"{', '.join(shipped_domains())})")
    return Domain.from_file(resolved)
