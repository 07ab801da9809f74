"""ReadPreference values, their validation, and the $readPreference a command carries."""

from __future__ import annotations

import pytest

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.sdam import ServerType, TopologyType
from mongo_sansio.selection import (
    PRIMARY,
    Mode,
    ReadPreference,
    check_max_staleness,
    read_preference_document,
    secondary_ok,
    smallest_max_staleness,
)


def test_defaults_are_primary_and_the_empty_tag_set() -> None:
    assert PRIMARY.mode is Mode.PRIMARY
    assert [dict(t) for t in PRIMARY.tag_sets] == [{}]
    assert not PRIMARY.has_tags
    assert PRIMARY.max_staleness_seconds is None
    assert PRIMARY.to_document() == {"mode": "primary"}


@pytest.mark.parametrize("name", ["secondaryPreferred", "SecondaryPreferred", "SECONDARYPREFERRED"])
def test_mode_names_in_any_case(name: str) -> None:
    assert ReadPreference(mode=name).mode is Mode.SECONDARY_PREFERRED


@pytest.mark.parametrize("bad", ["secondaryish", "", 3, None])
def test_unknown_modes_name_the_option(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="readPreference"):
        ReadPreference(mode=bad)  # type: ignore[arg-type]


def test_tags_with_primary_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="readPreferenceTags"):
        ReadPreference(mode=Mode.PRIMARY, tag_sets=[{"dc": "ny"}])
    # the default (one empty tag set) is fine
    assert ReadPreference(mode=Mode.PRIMARY, tag_sets=[{}]).mode is Mode.PRIMARY


def test_max_staleness_with_primary_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="maxStalenessSeconds"):
        ReadPreference(mode=Mode.PRIMARY, max_staleness_seconds=120)


def test_hedge_is_accepted_validated_and_never_sent() -> None:
    rp = ReadPreference(mode=Mode.NEAREST, hedge={"enabled": True})
    assert dict(rp.hedge or {}) == {"enabled": True}
    assert "hedge" not in rp.to_document()
    with pytest.raises(ConfigurationError, match="hedge"):
        ReadPreference(mode=Mode.NEAREST, hedge=["enabled"])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="hedge"):
        ReadPreference(mode=Mode.PRIMARY, hedge={"enabled": True})


@pytest.mark.parametrize("value", [-1, None, -1.0])
def test_minus_one_means_no_max_staleness(value: object) -> None:
    assert (
        ReadPreference(mode="secondary", max_staleness_seconds=value).max_staleness_seconds is None
    )


@pytest.mark.parametrize("value", [0, -2, 1.5, "90", True, float("nan")])
def test_bad_max_staleness_values(value: object) -> None:
    with pytest.raises(ConfigurationError, match="maxStalenessSeconds"):
        ReadPreference(mode="secondary", max_staleness_seconds=value)


@pytest.mark.parametrize("bad", [{"dc": "ny"}, ["dc"], [{"dc": 1}], "dc:ny"])
def test_bad_tag_sets(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="readPreferenceTags"):
        ReadPreference(mode="secondary", tag_sets=bad)  # type: ignore[arg-type]


def test_values_are_frozen() -> None:
    rp = ReadPreference(mode="nearest", tag_sets=[{"dc": "ny"}])
    with pytest.raises(AttributeError):
        rp.mode = Mode.PRIMARY  # type: ignore[misc]
    with pytest.raises(TypeError):
        rp.tag_sets[0]["dc"] = "sf"  # type: ignore[index]


def test_document_round_trip() -> None:
    document = {"mode": "secondary", "tags": [{"dc": "ny"}, {}], "maxStalenessSeconds": 120}
    rp = ReadPreference.from_document(document)
    assert rp.to_document() == document
    assert ReadPreference.from_document({"maxStalenessSeconds": -1}) == PRIMARY
    with pytest.raises(ConfigurationError):
        ReadPreference.from_document(["mode"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("heartbeat", "smallest"), [(10.0, 90.0), (0.5, 90.0), (80.0, 90.0), (120.0, 130.0)]
)
def test_smallest_max_staleness(heartbeat: float, smallest: float) -> None:
    assert smallest_max_staleness(heartbeat) == smallest
    check_max_staleness(
        ReadPreference(mode="nearest", max_staleness_seconds=int(smallest)), heartbeat
    )
    with pytest.raises(ConfigurationError, match="maxStalenessSeconds"):
        check_max_staleness(
            ReadPreference(mode="nearest", max_staleness_seconds=int(smallest) - 1), heartbeat
        )


SECONDARY = ReadPreference(mode="secondary", tag_sets=[{"dc": "ny"}], max_staleness_seconds=100)
RS = (TopologyType.REPLICA_SET_WITH_PRIMARY, ServerType.RS_SECONDARY)


@pytest.mark.parametrize(
    ("rp", "topology_type", "server_type", "document", "flag"),
    [
        # replica sets: nothing for primary, the preference otherwise
        (PRIMARY, *RS, None, False),
        (SECONDARY, *RS, SECONDARY.to_document(), True),
        # mongos and load balancers: the same rule
        (PRIMARY, TopologyType.SHARDED, ServerType.MONGOS, None, False),
        (
            ReadPreference(mode="secondaryPreferred"),
            TopologyType.SHARDED,
            ServerType.MONGOS,
            {"mode": "secondaryPreferred"},
            True,
        ),
        (
            SECONDARY,
            TopologyType.LOAD_BALANCED,
            ServerType.LOAD_BALANCER,
            SECONDARY.to_document(),
            True,
        ),
        # Single: a standalone never gets one; a mongos gets the mongos rules; any other
        # member gets primaryPreferred for primary so that it accepts the read
        (SECONDARY, TopologyType.SINGLE, ServerType.STANDALONE, None, False),
        (PRIMARY, TopologyType.SINGLE, ServerType.MONGOS, None, False),
        (SECONDARY, TopologyType.SINGLE, ServerType.MONGOS, SECONDARY.to_document(), True),
        (PRIMARY, TopologyType.SINGLE, ServerType.RS_SECONDARY, {"mode": "primaryPreferred"}, True),
        (SECONDARY, TopologyType.SINGLE, ServerType.RS_SECONDARY, SECONDARY.to_document(), True),
    ],
)
def test_read_preference_for_commands(
    rp: ReadPreference,
    topology_type: TopologyType,
    server_type: ServerType,
    document: dict[str, object] | None,
    flag: bool,
) -> None:
    assert read_preference_document(rp, topology_type, server_type) == document
    assert secondary_ok(rp, topology_type, server_type) is flag


@pytest.mark.parametrize("topology_type", list(TopologyType))
def test_writes_carry_no_read_preference(topology_type: TopologyType) -> None:
    assert (
        read_preference_document(SECONDARY, topology_type, ServerType.MONGOS, is_write=True) is None
    )
    assert not secondary_ok(SECONDARY, topology_type, ServerType.RS_PRIMARY, is_write=True)


def test_pymongos_attribute_names() -> None:
    """``mongos_mode`` and ``max_staleness`` as PyMongo's read preferences spell them."""
    import pymongo.read_preferences as theirs

    ours = ReadPreference(mode="secondaryPreferred", max_staleness_seconds=120)
    their = theirs.SecondaryPreferred(max_staleness=120)
    assert (ours.mongos_mode, ours.max_staleness, ours.name) == (
        their.mongos_mode, their.max_staleness, their.name
    )
    assert ReadPreference.NEAREST.max_staleness == theirs.Nearest().max_staleness == -1
    assert ReadPreference.PRIMARY.mongos_mode == theirs.Primary().mongos_mode
