"""Every package directory in the repository is installed, under the mongo_sansio namespace."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _configured() -> tuple[set[str], dict[str, str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(config["packages"]), dict(config["package-dir"])


def test_every_package_directory_is_listed() -> None:
    packages, package_dir = _configured()
    on_disk = set()
    for name, folder in package_dir.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            on_disk.add(".".join((name, *rel)))
    # subpackages of a mapped package that has its own mapping are found through that mapping
    assert on_disk - packages == set(), "add these to [tool.setuptools] packages"
    assert packages - on_disk == set(), "these listed packages have no __init__.py"


def test_no_generic_top_level_names_are_claimed() -> None:
    packages, package_dir = _configured()
    assert {name.split(".")[0] for name in packages} == {"mongo_sansio"}
    assert package_dir["mongo_sansio.transports"] == "transports"
    assert package_dir["mongo_sansio.adapters"] == "adapters"


def test_transports_and_adapters_import_under_the_namespace() -> None:
    import mongo_sansio.adapters
    import mongo_sansio.transports

    assert Path(mongo_sansio.transports.__file__).parent == ROOT / "transports"
    assert Path(mongo_sansio.adapters.__file__).parent == ROOT / "adapters"
