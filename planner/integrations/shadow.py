"""The shadow report: what the planner would have done, read from an outcome log of shadow sessions.

Every session an integration ran in ``shadow`` mode keeps, in its receipt's
``integration.shadow`` block, one row per tool call and one at the end: the
planner's choice there, the agent's, whether they agree, the reason the gates
would have refused the call, and the agent's choice's expected loss minus the
planner's under the model (``loss_difference``; absent where the model cannot
score the agent's choice, such as a call the gates refuse).
:func:`shadow_report` summarises them; ``planner shadow-report LOG`` prints it.

The expected loss difference per session is the sum of its rows'
differences; the report gives their mean over sessions with a 90% percentile
bootstrap interval (2,000 resamples, seed 0: the same log gives the same
interval).
"""

from __future__ import annotations

from collections import Counter

import attrs
import numpy as np

from planner.errors import PlannerError

__all__ = ["ShadowReport", "shadow_report", "format_report", "plot_report"]


@attrs.frozen(kw_only=True)
class ShadowReport:
    """What the planner would have done across the shadow sessions of a log."""

    sessions: int
    decisions: int
    agreements: int
    refusals: tuple = attrs.field(converter=tuple)       # (reason, count), most frequent first
    added: tuple = attrs.field(converter=tuple)          # (observation, count): it would have acquired more
    instead: tuple = attrs.field(converter=tuple)        # (agent's call, planner's choice or "stop", count)
    loss_differences: tuple = attrs.field(converter=tuple)  # per session
    interval: tuple | None = None

    @property
    def agreement_rate(self) -> float:
        return self.agreements / self.decisions if self.decisions else float("nan")

    @property
    def mean_loss_difference(self) -> float:
        return float(np.mean(self.loss_differences)) if self.loss_differences else float("nan")

    def to_json(self) -> dict:
        return {"sessions": self.sessions, "decisions": self.decisions, "agreements": self.agreements,
                "agreement_rate": self.agreement_rate,
                "would_refuse": [{"reason": r, "calls": n} for r, n in self.refusals],
                "would_add": [{"observation": o, "sessions": n} for o, n in self.added],
                "instead": [{"agent": a, "planner": p, "calls": n} for a, p, n in self.instead],
                "loss_difference": {"mean": self.mean_loss_difference,
                                    "interval_90": list(self.interval) if self.interval else None,
                                    "per_session": list(self.loss_differences)}}


def shadow_report(receipts, *, resamples: int = 2000, seed: int = 0) -> ShadowReport:
    """Summarise the shadow rows of `receipts` (receipts of other modes are skipped).

    >>> r = shadow_report([{"integration": {"mode": "shadow", "shadow": [
    ...     {"kind": "call", "agent": "a", "planner": "a", "agree": True, "loss_difference": 0.0},
    ...     {"kind": "end", "agent": None, "planner": "b", "agree": False, "loss_difference": 1.5}]}}])
    >>> r.agreement_rate, r.added, r.mean_loss_difference
    (0.5, (('b', 1),), 1.5)
    """
    sessions = decisions = agreements = 0
    refusals, added, instead = Counter(), Counter(), Counter()
    per_session = []
    for receipt in receipts:
        block = (receipt or {}).get("integration") or {}
        if block.get("mode") != "shadow":
            continue
        sessions += 1
        total = 0.0
        for row in block.get("shadow", []):
            decisions += 1
            agreements += bool(row.get("agree"))
            if row.get("would_refuse"):
                refusals[row["would_refuse"]] += 1
            if row.get("kind") == "end" and row.get("planner"):
                added[row["planner"]] += 1
            elif row.get("kind") == "call" and not row.get("agree") and not row.get("would_refuse"):
                instead[(row.get("agent"), row.get("planner") or "stop")] += 1
            total += float(row.get("loss_difference") or 0.0)
        per_session.append(total)
    interval = None
    if len(per_session) >= 2:
        rng = np.random.default_rng(seed)
        x = np.asarray(per_session)
        means = x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
        interval = (float(np.quantile(means, 0.05)), float(np.quantile(means, 0.95)))
    order = lambda c: sorted(c.items(), key=lambda kv: (-kv[1], str(kv[0])))  # noqa: E731
    return ShadowReport(sessions=sessions, decisions=decisions, agreements=agreements,
                        refusals=order(refusals), added=order(added),
                        instead=[(a, p, n) for (a, p), n in order(instead)],
                        loss_differences=per_session, interval=interval)


def format_report(report: ShadowReport) -> str:
    """The report as ``planner shadow-report`` prints it."""
    if report.sessions == 0:
        return "no shadow sessions in the log"
    lines = [f"shadow sessions {report.sessions}  decisions {report.decisions}  "
             f"agreement {report.agreements}/{report.decisions} ({100 * report.agreement_rate:.1f}%)"]
    lines.append("would refuse: " + (", ".join(f"{r} ({n})" for r, n in report.refusals) or "nothing"))
    lines.append("would add: " + (", ".join(f"{o} ({n} sessions)" for o, n in report.added) or "nothing"))
    if report.instead:
        lines.append("would choose otherwise: " + ", ".join(f"{a} -> {p} ({n})" for a, p, n in report.instead))
    ci = (f"  90% interval [{report.interval[0]:.3f}, {report.interval[1]:.3f}]" if report.interval
          else "  (one session: no interval)")
    lines.append(f"expected loss of the agent's choices minus the planner's, per session: "
                 f"mean {report.mean_loss_difference:.3f}{ci}")
    return "\n".join(lines)


def plot_report(report: ShadowReport, path) -> None:
    """A PNG: the per-session expected loss differences, and the agreement rate (needs matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlannerError("the shadow report's PNG needs matplotlib: pip install 'evidence-planner[bench]'") from None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    x = np.asarray(report.loss_differences)
    ax.hist(x, bins=max(5, min(30, len(x))), color="#4c72b0", zorder=2)
    ax.axvline(report.mean_loss_difference, color="black", linestyle="--", label="mean", zorder=3)
    if report.interval:
        ax.axvspan(*report.interval, color="grey", alpha=0.25, label="90% interval of the mean", zorder=0)
    ax.set_xlabel("expected loss, agent minus planner (loss units per session)")
    ax.set_ylabel("sessions")
    ax.set_title(f"shadow: {report.sessions} sessions, agreement {100 * report.agreement_rate:.0f}%")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
