"""Likelihoods from logged sessions: Dirichlet posteriors by EM, the calibrated domain file, its report.

- :mod:`planner.calibration.calibrate`: estimate every likelihood row and failure rate from the outcome log;
- :mod:`planner.calibration.report`: the calibration report and its reliability pictures.
"""

__all__ = ["calibrate", "report"]
