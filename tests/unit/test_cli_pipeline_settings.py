"""`mongo-sansio pipeline --master URL --conf KEY=VALUE`: what the Spark session is built with."""

from __future__ import annotations

import pytest

from mongo_sansio.adapters.cli import build_parser
from mongo_sansio.adapters.cli_pipeline import session_settings


def test_local_by_default_with_the_pipelines_own_settings() -> None:
    args = build_parser().parse_args(["pipeline"])
    master, settings = session_settings(args, "/tmp/log4j2.properties")
    assert master == "local[*]"
    assert settings["spark.ui.enabled"] == "false"
    assert settings["spark.driver.extraJavaOptions"].endswith("file:/tmp/log4j2.properties")


def test_master_and_repeated_conf_pass_through_and_win() -> None:
    args = build_parser().parse_args(
        [
            "pipeline",
            "--master", "spark://127.0.0.1:7077",
            "--conf", "spark.executor.cores=1",
            "--conf", "spark.sql.shuffle.partitions=8",
            "--conf", "spark.executorEnv.PYSPARK_PYTHON=/opt/py/bin/python=3",
        ]
    )
    master, settings = session_settings(args, "log4j")
    assert master == "spark://127.0.0.1:7077"
    assert settings["spark.executor.cores"] == "1"
    assert settings["spark.sql.shuffle.partitions"] == "8"  # the user's value wins over ours
    assert settings["spark.executorEnv.PYSPARK_PYTHON"] == "/opt/py/bin/python=3"


@pytest.mark.parametrize("bad", ["novalue", "=x", ""])
def test_a_conf_without_key_and_value_is_a_usage_error(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["pipeline", "--conf", bad])
    assert exited.value.code == 2
    assert "--conf" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("namespace", "several"),
    [("db.coll", False), ("db.a,b", True), ("db.*", True), ("*", True), ("db.with.dots", False)],
)
def test_which_namespaces_are_partitioned_by_collection(namespace: str, several: bool) -> None:
    from mongo_sansio.adapters.cli_pipeline import several_namespaces

    assert several_namespaces(namespace) is several


def test_source_options_pass_through_but_not_the_pipelines_own() -> None:
    from mongo_sansio.adapters.cli_pipeline import _source_options

    args = build_parser().parse_args(
        ["pipeline", "--option", "publishFullDocumentOnly=true", "--option", "mode=PERMISSIVE",
         "--option", "comment=a=b"]
    )
    options = _source_options(args, "mongodb://h/", "db.c", "/cp")
    assert options["publishFullDocumentOnly"] == "true"
    assert options["mode"] == "PERMISSIVE"
    assert options["comment"] == "a=b"
    assert (options["database"], options["collection"]) == ("db", "c")
    for own in ("uri=mongodb://x/", "Collection=other", "noequals"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["pipeline", "--option", own])


def test_the_progress_line_counts_marked_or_dropped_documents() -> None:
    from mongo_sansio.adapters.cli_pipeline import _progress_line

    base = {"batchId": 3, "numInputRows": 10, "processedRowsPerSecond": 5.0, "sources": [{}]}
    assert _progress_line(base).endswith("lag -")
    assert _progress_line({**base, "observedMetrics": {"dropped": {"n": 2}}}).endswith(", 2 dropped")
    assert _progress_line({**base, "observedMetrics": {"marked": {"n": 0}}}).endswith(", 0 marked")
