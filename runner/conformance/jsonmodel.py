"""The one base of every record the runner writes as JSON and reads back (a cell's result, its grade, its pins):
pydantic models with camelCase keys, validated when read.

- Keys are camelCase (``reason_code`` is written ``reasonCode``), as in upstream's artifacts; a record is built in
  Python by field name or read by key.
- A record is frozen, and reading one refuses a key it does not know (``extra="forbid"``), so a misspelt field is
  named rather than dropped: :func:`problems` turns a validation error into ``field 'grade.attempts.0.status': …``.
- Keys are written in the order the fields are declared. Whether a key is written when it holds nothing is the
  field's own rule, kept from the JSON the runner has always written: a field declared ``= omitted()`` is left out
  when it is None (``omitted(empty=True)``: when it is empty or false); any other is written, null included.

The pure core (``runner.core``) holds no pydantic: these records start one floor up.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, JsonValue, ValidationError
from pydantic.alias_generators import to_camel

__all__ = ["JsonModel", "JsonValue", "omitted", "problems"]


def _is_none(value: object) -> bool:
    return value is None


def _is_empty(value: object) -> bool:
    return not value


def omitted(*, empty: bool = False, default: object = None, read_as: tuple[str, ...] = ()) -> Any:
    """A field left out of the JSON when it is None (``empty``: when it is falsy: an empty list, False). Typed
    ``Any`` as pydantic's own ``Field`` is, so that it stands as the field's default. ``read_as``: every key it is
    read from (its own and the ones earlier records wrote it under), when it has had another."""
    return Field(default=default, exclude_if=_is_empty if empty else _is_none,
                 validation_alias=AliasChoices(*read_as) if read_as else None)


class JsonModel(BaseModel):
    """A record written as camelCase JSON: frozen, and strict about the keys it reads."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        frozen=True,
        extra="forbid",
    )

    def to_dict(self) -> dict[str, JsonValue]:
        """The record as JSON values (enums as their values, tuples as lists), keys in their written order."""
        return self.model_dump(mode="json")

    def dumps(self, *, indent: int | None = None) -> str:
        """The record as JSON text, as ``json.dumps`` writes it (the same bytes the runner has always written)."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)


def problems(error: ValidationError) -> str:
    """Every problem of a record that cannot be read, each naming the field (``field 'pins.trial': …``)."""
    return "; ".join(
        f"field '{'.'.join(str(part) for part in found['loc'])}': {found['msg']}" for found in error.errors()
    )
