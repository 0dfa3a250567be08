"""Prices: the cost of a usage, and a price file read or refused with its file and field named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runner.conformance.prices import ModelPrice, PriceFileError, cost, load_prices, parse_prices
from runner.core.usage import Usage
from runner.errors import Exit

DOC = Path(__file__).resolve().parents[2] / "docs" / "prices.md"


def test_cost_prices_each_kind_of_token_at_its_own_rate() -> None:
    price = ModelPrice(input=3, cached_input=0.3, output=15, reasoning=20)
    usage = Usage(input=1_000_000, cached_input=400_000, output=200_000, reasoning=50_000)
    # 600k input at 3, 400k cached at 0.3, 150k output at 15, 50k reasoning at 20 (per million)
    assert cost(usage, price) == pytest.approx(1.8 + 0.12 + 2.25 + 1.0)
    assert cost(Usage(), price) == 0


def test_an_absent_cached_or_reasoning_price_is_the_input_or_output_price() -> None:
    plain = ModelPrice(input=2, output=8)
    usage = Usage(input=500_000, cached_input=500_000, output=250_000, reasoning=250_000)
    assert cost(usage, plain) == pytest.approx(0.5 * 2 + 0.25 * 8)


def test_counts_a_vendor_reported_inconsistently_are_never_priced_negative() -> None:
    # a cached count above the input (or reasoning above the output) is priced as all cached (all reasoning)
    assert cost(Usage(input=10, cached_input=30, output=5, reasoning=9), ModelPrice(input=1, output=1)) == 15 / 1e6


def test_the_example_in_the_docs_reads_and_prices() -> None:
    block = re.search(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block is not None
    prices = parse_prices(block.group(1), "docs/prices.md")
    assert prices.currency == "USD" and set(prices.models) == {"example-model-large", "example-model-small"}
    assert prices.cost_of(Usage(input=1_000_000, output=1_000_000), "example-model-small") == pytest.approx(1.5)
    assert prices.cost_of(Usage(input=1), "a-model-the-file-does-not-name") is None
    assert prices.cost_of(Usage(input=1), None) is None


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("models:\n  m: {input: -1, output: 2}\n", "models.m.input"),
        ("models:\n  m: {input: 1, output: true}\n", "models.m.output"),
        ("models:\n  m: {input: 1, output: '2.5'}\n", "models.m.output"),
        ("models:\n  m: {input: 1, output: .inf}\n", "models.m.output"),
        ("models:\n  m: {input: 1}\n", "models.m.output"),
        ("models:\n  m: {input: 1, output: 1, cache: 1}\n", "models.m.cache"),
        ("models: {}\n", "models"),
        ("currency: USD\n", "models"),
        ("models:\n  m: {input: 1, output: 1}\nprice_per: thousand\n", "price_per"),
    ],
)
def test_a_bad_file_is_refused_naming_the_file_and_the_field(text: str, field: str) -> None:
    with pytest.raises(PriceFileError) as caught:
        parse_prices(text, "prices.yaml")
    assert f"prices.yaml: field '{field}'" in str(caught.value)
    assert caught.value.exit_code is Exit.USAGE


def test_a_file_that_is_not_yaml_or_not_a_mapping_or_not_there_is_refused(tmp_path: Path) -> None:
    for text, said in (("models: [unclosed\n", "not valid YAML"), ("- a list\n", "expected a mapping")):
        with pytest.raises(PriceFileError, match=rf"prices\.yaml: {said}"):
            parse_prices(text, "prices.yaml")
    with pytest.raises(PriceFileError, match=r"missing\.yaml: cannot read"):
        load_prices(tmp_path / "missing.yaml")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(PriceFileError, match=r"binary\.yaml: not UTF-8"):
        load_prices(binary)
    good = tmp_path / "prices.yaml"
    good.write_text("models:\n  m: {input: 1, output: 2}\n", encoding="utf-8")
    assert load_prices(good).for_model("m") == ModelPrice(input=1, output=2)
