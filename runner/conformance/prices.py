"""What a turn's tokens cost, from a price file the user gives: prices are the user's, never runner's.

runner ships no price as a fact (vendors change them, and discount them per account); a user who wants costs
writes a small YAML file, keyed by the model id a run records (the live model a profile names, or the one the CLI
asked for), each price in the file's currency **per million tokens** (``docs/prices.md`` has an example)::

    currency: USD            # optional, a label only (default USD)
    models:
      some-model-id:
        input: 3.00          # per million input tokens not read from the cache
        cached_input: 0.30   # per million cached input tokens (optional: the input price)
        output: 15.00        # per million output tokens that are not reasoning
        reasoning: 15.00     # per million reasoning tokens (optional: the output price)

:func:`cost` is the pure function from a :class:`~runner.core.usage.Usage` and one model's :class:`ModelPrice`:
``(input - cached) * input + cached * cached_input + (output - reasoning) * output + reasoning * reasoning``, over
a million. A file that cannot be used is a :class:`PriceFileError` naming the file and the field
(``prices.yaml: field 'models.m.output': ...``), never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from runner.core.usage import Usage
from runner.errors import UsageError

PER = 1_000_000  # prices are per million tokens


def _number(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("a price must be a number (per million tokens)")  # YAML's true or '2.5' is no price
    return value


Price = Annotated[float, BeforeValidator(_number), Field(ge=0, allow_inf_nan=False)]


class PriceFileError(UsageError, ValueError):
    """A price file that cannot be read or used; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelPrice(_Strict):
    """One model's prices per million tokens; an absent ``cached_input`` is the input price, an absent
    ``reasoning`` the output price."""

    input: Price
    output: Price
    cached_input: Price | None = None
    reasoning: Price | None = None


class Prices(_Strict):
    """A price file: its currency (a label) and the prices by model id."""

    currency: str = Field(default="USD", min_length=1, max_length=16)
    models: dict[Annotated[str, Field(min_length=1)], ModelPrice] = Field(min_length=1)

    def for_model(self, model: str | None) -> ModelPrice | None:
        """The prices of ``model`` (its id exactly as the run recorded it), or None."""
        return self.models.get(model) if model else None

    def cost_of(self, usage: Usage, model: str | None) -> float | None:
        """What ``usage`` of ``model`` cost, or None when the file has no price for it."""
        price = self.for_model(model)
        return cost(usage, price) if price is not None else None


def cost(usage: Usage, price: ModelPrice) -> float:
    """What ``usage`` cost at ``price`` (the rule in the module docstring), in the price file's currency."""
    cached = min(usage.cached_input, usage.input)
    reasoning = min(usage.reasoning, usage.output)
    cached_price = price.input if price.cached_input is None else price.cached_input
    reasoning_price = price.output if price.reasoning is None else price.reasoning
    return ((usage.input - cached) * price.input + cached * cached_price
            + (usage.output - reasoning) * price.output + reasoning * reasoning_price) / PER


def parse_prices(text: str, source: str) -> Prices:
    """A price file's text (``source`` names it in errors)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise PriceFileError(f"{source}: not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise PriceFileError(f"{source}: expected a mapping with 'models' at the top level")
    try:
        return Prices.model_validate(data)
    except ValidationError as err:
        found = [f"{source}: field '{'.'.join(str(p) for p in e['loc'])}': {e['msg']}" for e in err.errors()]
        raise PriceFileError("\n".join(found)) from None


def load_prices(path: Path) -> Prices:
    """Read and validate a price file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise PriceFileError(f"{path}: cannot read: {err.strerror}") from None
    except UnicodeDecodeError:
        raise PriceFileError(f"{path}: not UTF-8 text") from None
    return parse_prices(text, str(path))
