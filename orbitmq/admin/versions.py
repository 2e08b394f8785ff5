"""`MQVersion.getVersionDesc`: a client's version number (an ordinal of RocketMQ 4.9's `Version`
enum) as the name mqadmin prints, e.g. 407 -> "V4_9_7"; past the enum's end, "HIGHER_VERSION"."""

from __future__ import annotations

from functools import lru_cache

_FIRST = (
    "V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1", "V3_0_0_BETA1", "V3_0_0_BETA2", "V3_0_0_BETA3", "V3_0_0_BETA4",
    "V3_0_0_BETA5", "V3_0_0_BETA6_SNAPSHOT", "V3_0_0_BETA6", "V3_0_0_BETA7_SNAPSHOT", "V3_0_0_BETA7",
    "V3_0_0_BETA8_SNAPSHOT", "V3_0_0_BETA8", "V3_0_0_BETA9_SNAPSHOT", "V3_0_0_BETA9", "V3_0_0_FINAL",
)
#: (major, minor, first patch, last patch) of the enum's SNAPSHOT/release pairs after V3_0_0_FINAL.
_RUNS = (
    [(3, 0, 1, 15), (3, 1, 0, 9), (3, 2, 0, 9)]
    + [(3, minor, 1, 9) for minor in range(3, 10)]
    + [(major, minor, 0, 9) for major in (4, 5) for minor in range(10)]
)


@lru_cache(maxsize=1)
def _names() -> tuple[str, ...]:
    names = list(_FIRST)
    for major, minor, first, last in _RUNS:
        for patch in range(first, last + 1):
            name = f"V{major}_{minor}_{patch}"
            names += [name + "_SNAPSHOT", name]
    return tuple(names)


def version_desc(value: int) -> str:
    names = _names()
    if 0 <= value < len(names):
        return names[value]
    return "HIGHER_VERSION"
