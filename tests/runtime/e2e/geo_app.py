"""An app with a global table, for `streamjoin worker` subprocesses: visits joined with the
country of each (names suffixed by STREAMJOIN_TEST_SUFFIX, as the clicks app)."""

from __future__ import annotations

import os
from typing import Any

import streamjoin

SUFFIX = os.environ.get("STREAMJOIN_TEST_SUFFIX", "local")
TOPICS = (f"visits-{SUFFIX}", f"countries-{SUFFIX}", f"geo-{SUFFIX}")

joins = streamjoin.App(f"geo-{SUFFIX}")
visits = joins.topic(f"visits-{SUFFIX}")
countries = joins.global_table(f"countries-{SUFFIX}")


@joins.join(visits, countries, key=lambda v: v["country"], how="inner", into=f"geo-{SUFFIX}")
def locate(visit: dict[str, Any], country: dict[str, Any]) -> dict[str, Any]:
    return {"visit": visit["id"], "country": country["name"]}
