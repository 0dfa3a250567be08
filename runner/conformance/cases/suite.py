"""The case set in upstream's suite order (§6.9): the suites concatenated, and lookup by id.

Upstream declares one ordered list (``suite.ts``); this runner keeps it as consecutive runs of
related cases, one module each, listed in :data:`SUITES` in that order. :data:`CASES` is their
concatenation, so its order is the suite order the report, the row ids and every set hash rely on.
"""

from __future__ import annotations

import runner.conformance.cases.authority as authority
import runner.conformance.cases.bounds as bounds
import runner.conformance.cases.broker as broker
import runner.conformance.cases.declared as declared
import runner.conformance.cases.endings as endings
import runner.conformance.cases.lifetime as lifetime
import runner.conformance.cases.rollback as rollback
import runner.conformance.cases.stores as stores
import runner.conformance.cases.tools as tools
from runner.conformance.cases.model import Case, Row
from runner.errors import UnknownName

SUITES = (authority, lifetime, stores, tools, bounds, rollback, broker, endings, declared)

CASES: dict[str, Case] = {case.id: case for suite in SUITES for case in suite.CASES}


def rows(cases: dict[str, Case] | None = None) -> list[Row]:
    """Every (case, condition), in suite order."""
    return [Row(case, condition) for case in (cases or CASES).values() for condition in case.conditions]


class UnknownCase(UnknownName, KeyError):
    def __init__(self, case_id: str) -> None:
        super().__init__(case_id)
        self.case_id = case_id

    def __str__(self) -> str:
        return f"no such case: {self.case_id!r} (known: {', '.join(sorted(CASES))})"


def get_case(case_id: str) -> Case:
    try:
        return CASES[case_id]
    except KeyError:
        raise UnknownCase(case_id) from None
