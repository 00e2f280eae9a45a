"""``planner warm``: compile every search kernel into numba's on-disk cache ahead of time (images, CI)."""

from __future__ import annotations

import warnings

from planner.errors import PlannerError

__all__ = ["register"]


def cmd_warm(args) -> int:
    from lookahead.jit import NoKernelCacheWarning
    from planner.warm import cache_folder, warm

    with warnings.catch_warnings():
        warnings.simplefilter("error", NoKernelCacheWarning)
        try:
            report = warm()
        except NoKernelCacheWarning:
            raise PlannerError("numba cannot write its kernel cache here (no writable cache folder): warming would "
                               "be lost when this process ends; set NUMBA_CACHE_DIR to a writable folder") from None
    for line in report.lines():
        print(line)
    print(f"cache: {cache_folder()}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("warm", help="compile the search kernels into numba's on-disk cache ahead of time "
                                    "(for images and CI); prints each kernel's compile time")
    p.set_defaults(func=cmd_warm)
