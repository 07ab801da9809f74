"""The handshake's client metadata: FaaS and container detection, driver info, truncation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.connection import (
    MAX_METADATA_SIZE,
    DriverInfo,
    build_client_metadata,
    detect_container,
    detect_faas,
)
from mongo_sansio.connection.metadata import metadata_size
from mongo_sansio.errors import ConfigurationError

DRIVER = DriverInfo("mongo-sansio", "1.0")
OS = {"type": "Linux", "name": "Ubuntu 24.04 LTS", "architecture": "x86_64", "version": "6.8"}
AWS = {"AWS_EXECUTION_ENV": "AWS_Lambda_java8"}


def build(**overrides: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "app_name": None,
        "driver": DRIVER,
        "os": OS,
        "platform": "CPython 3.11.9",
        "env": {},
    }
    arguments.update(overrides)
    return build_client_metadata(**arguments)


# -- FaaS (the handshake prose tests' environments, and the rest of the table) ------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param(
            {**AWS, "AWS_REGION": "us-east-2", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"},
            {"name": "aws.lambda", "memory_mb": 1024, "region": "us-east-2"},
            id="valid-aws",
        ),
        pytest.param(
            {"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001"},
            {"name": "aws.lambda"},
            id="aws-runtime-api",
        ),
        pytest.param(
            {"FUNCTIONS_WORKER_RUNTIME": "node"}, {"name": "azure.func"}, id="valid-azure"
        ),
        pytest.param(
            {
                "K_SERVICE": "servicename",
                "FUNCTION_MEMORY_MB": "1024",
                "FUNCTION_TIMEOUT_SEC": "60",
                "FUNCTION_REGION": "us-central1",
            },
            {"name": "gcp.func", "timeout_sec": 60, "memory_mb": 1024, "region": "us-central1"},
            id="valid-gcp",
        ),
        pytest.param({"FUNCTION_NAME": "f"}, {"name": "gcp.func"}, id="gcp-function-name"),
        pytest.param(
            {"VERCEL": "1", "VERCEL_REGION": "cdg1"},
            {"name": "vercel", "region": "cdg1"},
            id="valid-vercel",
        ),
        pytest.param(
            {**AWS, "VERCEL": "1", "VERCEL_REGION": "cdg1", "AWS_REGION": "us-east-2"},
            {"name": "vercel", "region": "cdg1"},
            id="vercel-wins-over-aws",
        ),
        pytest.param({**AWS, "FUNCTIONS_WORKER_RUNTIME": "node"}, {}, id="aws-and-azure"),
        pytest.param({"K_SERVICE": "s", "VERCEL": "1"}, {}, id="gcp-and-vercel"),
        pytest.param({**AWS, "VERCEL": "1", "K_SERVICE": "s"}, {}, id="three-providers"),
        pytest.param(
            {**AWS, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "big"},
            {"name": "aws.lambda"},
            id="wrong-type",
        ),
        pytest.param(
            {**AWS, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "4294967296"},
            {"name": "aws.lambda"},
            id="memory-over-int32",
        ),
        pytest.param(
            {**AWS, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": " 12"}, {"name": "aws.lambda"}, id="spaces"
        ),
        pytest.param({"AWS_EXECUTION_ENV": "EC2"}, {}, id="aws-not-lambda"),
        pytest.param({"VERCEL": "", "FUNCTIONS_WORKER_RUNTIME": ""}, {}, id="empty-is-unset"),
        pytest.param({}, {}, id="none"),
    ],
)
def test_faas_detection(env: dict[str, str], expected: dict[str, Any]) -> None:
    assert detect_faas(env) == expected
    document = build(env=env)
    if expected:
        assert document["env"] == expected
    else:
        assert "env" not in document


def test_long_region_is_dropped_by_truncation() -> None:
    document = build(env={**AWS, "AWS_REGION": "a" * 512})
    assert document["env"] == {"name": "aws.lambda"}
    assert metadata_size(document) <= MAX_METADATA_SIZE


# -- container -----------------------------------------------------------------------------


def test_container_detection() -> None:
    assert detect_container({}) == {}
    assert detect_container({}, docker=True) == {"runtime": "docker"}
    assert detect_container({"KUBERNETES_SERVICE_HOST": "1"}) == {"orchestrator": "kubernetes"}
    assert detect_container({"KUBERNETES_SERVICE_HOST": "1"}, docker=True) == {
        "runtime": "docker",
        "orchestrator": "kubernetes",
    }


def test_container_alone_makes_an_env_without_name() -> None:
    assert build(docker=True)["env"] == {"container": {"runtime": "docker"}}


def test_container_and_faas_are_both_reported() -> None:
    env = {
        **AWS,
        "AWS_REGION": "us-east-2",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
        "KUBERNETES_SERVICE_HOST": "1",
    }
    assert build(env=env)["env"] == {
        "name": "aws.lambda",
        "memory_mb": 1024,
        "region": "us-east-2",
        "container": {"orchestrator": "kubernetes"},
    }


# -- the document's shape and driver info ----------------------------------------------------


def test_full_document() -> None:
    document = build(app_name="inventory", env={"VERCEL": "1"})
    assert document == {
        "application": {"name": "inventory"},
        "driver": {"name": "mongo-sansio", "version": "1.0"},
        "os": OS,
        "platform": "CPython 3.11.9",
        "env": {"name": "vercel"},
    }


def test_os_type_defaults_to_unknown_and_unknown_os_fields_are_dropped() -> None:
    document = build(os={"name": "", "architecture": "arm64", "kernel": "x"}, platform=None)
    assert document["os"] == {"type": "unknown", "architecture": "arm64"}
    assert "platform" not in document


def test_wrapping_libraries_are_appended() -> None:
    document = build(
        wrapping=[
            DriverInfo("library", "1.2", "Library Platform"),
            DriverInfo("library", "1.2", "Library Platform"),  # the same again: not repeated
            DriverInfo("framework", None, None),
        ]
    )
    assert document["driver"] == {"name": "mongo-sansio|library|framework", "version": "1.0|1.2"}
    assert document["platform"] == "CPython 3.11.9|Library Platform"


@pytest.mark.parametrize("field", ["name", "version", "platform"])
def test_driver_info_refuses_the_delimiter(field: str) -> None:
    values = {"name": "a", "version": "1", "platform": "p", field: "x|y"}
    with pytest.raises(ConfigurationError, match=field):
        DriverInfo(**values)


def test_driver_needs_name_and_version() -> None:
    with pytest.raises(ConfigurationError):
        DriverInfo("")
    with pytest.raises(ConfigurationError, match="version"):
        build(driver=DriverInfo("mongo-sansio"))


# -- appName ---------------------------------------------------------------------------------


def test_app_name_limit_counts_utf8_bytes() -> None:
    assert build(app_name="a" * 128)["application"] == {"name": "a" * 128}
    assert build(app_name="é" * 64)["application"] == {"name": "é" * 64}  # 128 bytes
    with pytest.raises(ConfigurationError, match="129 bytes"):
        build(app_name="a" * 129)
    with pytest.raises(ConfigurationError, match="130 bytes"):
        build(app_name="é" * 65)
    with pytest.raises(ConfigurationError, match="appname"):
        build(app_name="\ud800")


# -- truncation, one case per step ---------------------------------------------------------------


def test_small_document_is_untouched() -> None:
    env = {**AWS, "AWS_REGION": "us-east-2", "KUBERNETES_SERVICE_HOST": "1"}
    document = build(env=env)
    assert document["os"] == OS
    assert document["env"]["region"] == "us-east-2"


def test_step_1_env_keeps_only_its_name() -> None:
    env = {**AWS, "AWS_REGION": "r" * 400, "KUBERNETES_SERVICE_HOST": "1"}
    document = build(env=env)
    assert document["env"] == {"name": "aws.lambda"}
    assert document["os"] == OS  # step 2 was not needed
    assert document["platform"] == "CPython 3.11.9"


def test_step_1_drops_an_env_without_name() -> None:
    document = build(os={**OS, "name": "n" * 480}, docker=True)
    assert "env" not in document
    assert document["os"] == {"type": "Linux"}  # the os still did not fit


def test_step_2_os_keeps_only_its_type() -> None:
    env = {**AWS, "AWS_REGION": "r" * 400}
    document = build(env=env, os={**OS, "name": "n" * 400})
    assert document["env"] == {"name": "aws.lambda"}
    assert document["os"] == {"type": "Linux"}
    assert document["platform"] == "CPython 3.11.9"


def _platform_filling(room_left: int, **fields: Any) -> str:
    """A platform string that leaves exactly ``room_left`` bytes under the limit once env and
    the os's optional fields are gone."""
    bare = build(platform="p", os={"type": "Linux"}, **fields)
    bare.pop("env", None)
    return "p" * (MAX_METADATA_SIZE - metadata_size(bare) + 1 - room_left)


def test_step_3_env_goes_entirely() -> None:
    env = {**AWS, "AWS_REGION": "r" * 100}
    platform = _platform_filling(0)  # fits without env, and not with env.name
    document = build(env=env, platform=platform)
    assert "env" not in document
    assert document["os"] == {"type": "Linux"}
    assert document["platform"] == platform  # step 4 was not needed
    assert metadata_size(document) == MAX_METADATA_SIZE


def test_step_4_platform_is_truncated_to_fit_exactly() -> None:
    platform = "P" * 1000
    document = build(env={**AWS, "AWS_REGION": "r"}, platform=platform, app_name="app")
    assert "env" not in document
    assert document["os"] == {"type": "Linux"}
    assert platform.startswith(document["platform"])
    assert metadata_size(document) == MAX_METADATA_SIZE
    assert document["driver"] == {"name": "mongo-sansio", "version": "1.0"}
    assert document["application"] == {"name": "app"}


def test_step_4_cuts_on_a_character_boundary() -> None:
    platform = "€" * 400  # three bytes each
    document = build(platform=platform)
    assert platform.startswith(document["platform"])
    assert MAX_METADATA_SIZE - 2 <= metadata_size(document) <= MAX_METADATA_SIZE


def test_when_nothing_optional_is_left_the_error_names_the_cause() -> None:
    with pytest.raises(ConfigurationError, match="even without the optional fields"):
        build(app_name="a" * 128, wrapping=[DriverInfo("w" * 300, "v" * 100)])


_env_values = st.text(st.characters(codec="utf-8"), max_size=300)


@settings(max_examples=200, deadline=None)
@given(
    region=_env_values,
    os_name=_env_values,
    platform=st.text(st.characters(codec="utf-8"), max_size=700),
    app_name=st.text("ab", max_size=128),
    docker=st.booleans(),
    kubernetes=st.booleans(),
)
def test_truncation_keeps_the_required_fields_in_order(
    region: str, os_name: str, platform: str, app_name: str, docker: bool, kubernetes: bool
) -> None:
    env = {**AWS, "AWS_REGION": region}
    if kubernetes:
        env["KUBERNETES_SERVICE_HOST"] = "h"
    document = build(
        env=env, os={**OS, "name": os_name}, platform=platform, app_name=app_name, docker=docker
    )
    assert metadata_size(document) <= MAX_METADATA_SIZE
    assert document["driver"] == {"name": "mongo-sansio", "version": "1.0"}
    assert document["os"]["type"] == "Linux"
    assert document["application"] == {"name": app_name}
    # the steps are cumulative: a later one only happens after every earlier one
    full_os = {key: value for key, value in {**OS, "name": os_name}.items() if value}
    env_out = document.get("env")
    if env_out is not None and set(env_out) - {"name"}:  # step 1 not taken
        assert document["os"] == full_os
    if document["os"] != full_os:  # step 2 taken
        assert env_out is None or set(env_out) == {"name"}
    if env_out is None:  # step 3 (the env here always has a name, so step 1 keeps it)
        assert document["os"] == {"type": "Linux"}
    if document.get("platform") != (platform or None):  # step 4 taken
        assert env_out is None and document["os"] == {"type": "Linux"}
        assert platform.startswith(document.get("platform", ""))
