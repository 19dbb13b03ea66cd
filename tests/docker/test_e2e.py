"""docker/e2e.py (`make docker-e2e`) runs exactly docs/docker.md's commands, and its checks
tell right output from wrong; docker/standins.py names the images the compose files use."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "docker" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


e2e = _module("e2e")
session = _module("session")
standins = _module("standins")
demo = importlib.import_module("demo")  # apps/ads, on the path e2e set


def _docker_section_commands() -> list[str]:
    page = (ROOT / "docs" / "docker.md").read_text()
    [block] = re.findall(r"```bash\n(.*?)```", page, re.S)
    return block.strip().splitlines()


def test_the_script_runs_the_readme_commands_in_its_order() -> None:
    assert _docker_section_commands() == list(e2e.COMMANDS.values())
    compose = yaml.safe_load((ROOT / "docker" / "docker-compose.yml").read_text())
    # The second traffic run is the traffic service's own command with another seed and its
    # size; the first is the service's, with the demo's default seed and size.
    more = e2e.COMMANDS["more traffic"].split(" run --rm traffic ")[1].split()
    (first_seed, first_size), (seed, size) = e2e.RUNS.items()
    assert more == [
        *compose["services"]["traffic"]["command"],
        *("--seed", str(seed), "--impressions", str(size)),
    ]
    defaults = demo.arguments().parse_args([])
    assert (defaults.seed, defaults.impressions) == (first_seed, first_size)


def test_the_standins_carry_the_names_the_images_are_used_by() -> None:
    python, kafka = standins.base_images()
    assert f"FROM {python}\n" in (ROOT / "docker" / "Dockerfile").read_text()
    compose = yaml.safe_load((ROOT / "docker" / "docker-compose.yml").read_text())
    assert compose["services"]["kafka"]["image"] == kafka
    assert len(standins.recipe_digest()) == 16


def _traffic() -> Any:
    return e2e.live_traffic(200, 7)


def _line(record: dict[str, Any]) -> str:
    value = json.dumps(record, separators=(",", ":"))
    return f"partition=0 offset=1 timestamp=2026-01-01T00:00:00.000Z key=k value={value}\n"


def _output(traffic: Any) -> list[dict[str, Any]]:
    """What a correct join writes: each clicked impression with its delay, the others not."""
    clicks = {c.auction_id: c.timestamp_ms for c in traffic.clicks}
    return [
        {
            "auction_id": i.auction_id,
            "campaign": i.campaign,
            "clicked": i.auction_id in clicks,
            "click_delay_ms": clicks[i.auction_id] - i.timestamp_ms
            if i.auction_id in clicks
            else None,
        }
        for i in traffic.impressions
    ]


def test_right_output_passes_and_each_kind_of_wrong_record_is_told() -> None:
    traffic = _traffic()
    right = _output(traffic)
    values = [session.value_of(_line(record)) for record in right]
    verdict = e2e.judge(values, [traffic])
    assert verdict.wrong == []
    assert verdict.present == verdict.expected == len(traffic.clicks)
    assert (
        verdict.line()
        == f"joined: expected={len(traffic.clicks)} present={len(traffic.clicks)} duplicates=0"
    )

    clicked = next(r for r in right if r["clicked"])
    wrong = [
        {**clicked, "clicked": False, "click_delay_ms": None},  # unclicked though clicked
        {**clicked, "click_delay_ms": clicked["click_delay_ms"] + 1},  # another delay
        {**clicked, "auction_id": "auction-9-00000000"},  # no such impression
        clicked,  # a duplicate
    ]
    verdict = e2e.judge([json.dumps(r) for r in [*right, *wrong]], [traffic])
    assert [line.split(":")[0] for line in verdict.wrong] == [
        "written as not clicked although its click came",
        f"joined, but its click came {clicked['click_delay_ms']} ms on",
        "not an impression of the traffic",
    ]
    assert verdict.duplicates == 2  # the one with the other delay and the repeat

    missing = [r for r in right if r["auction_id"] != clicked["auction_id"]]
    verdict = e2e.judge([json.dumps(r) for r in missing], [traffic])
    assert verdict.present == verdict.expected - 1


def test_lines_without_a_value_are_not_records() -> None:
    assert session.value_of("waiting for topic 'ads-attributed' to be created\n") is None
    assert session.value_of("partition=1 offset=2 key=a value=x value=y\n") == "x value=y"
