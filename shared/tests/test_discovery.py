"""testbed_shared.discovery: a plugin family is a package with one plugin module each."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed_shared.discovery import Plugins


class Base:
    name = ""


MODULES = {
    "__init__.py": '"""plugins for the test"""\n',
    "base.py": "X = 1\n",
    "alpha.py": "from tests_discovery_base import Base\n\nclass Alpha(Base):\n    name = 'alpha'\n",
    "beta.py": "from tests_discovery_base import Base\n\nclass Beta(Base):\n    name = 'beta'\n",
    "_private.py": "raise RuntimeError('never imported')\n",
}


@pytest.fixture
def family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """A package ``fam_<n>`` on sys.path whose plugins subclass :class:`Base`."""
    pkg_name = f"fam_{abs(hash(tmp_path)) % 10**8}"
    pkg = tmp_path / pkg_name
    pkg.mkdir()
    for name, text in MODULES.items():
        (pkg / name).write_text(text)
    base = type(sys)("tests_discovery_base")
    base.Base = Base  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tests_discovery_base", base)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg_name, pkg
    for mod in [m for m in sys.modules if m == pkg_name or m.startswith(pkg_name + ".")]:
        del sys.modules[mod]


def test_modules_are_listed_without_importing_them(family: tuple[str, Path]) -> None:
    name, _ = family
    plugins = Plugins(name, Base, "name", named_as_module=True)
    assert plugins.modules() == ("alpha", "beta")
    assert plugins.keys() == ("alpha", "beta")
    assert f"{name}.alpha" not in sys.modules
    assert plugins.get("beta").__name__ == "Beta"
    assert f"{name}.alpha" not in sys.modules, "get imports only the plugin asked for"
    assert plugins.get("gamma") is None
    assert set(plugins.found().plugins) == {"alpha", "beta"}


def test_keys_need_plugins_named_as_their_modules(family: tuple[str, Path]) -> None:
    with pytest.raises(TypeError, match="not named as their modules"):
        Plugins(family[0], Base, "name").keys()


def test_a_module_holds_exactly_one_plugin(family: tuple[str, Path]) -> None:
    name, pkg = family
    (pkg / "two.py").write_text(MODULES["alpha.py"] + "\nclass B(Base):\n    name = 'b'\n")
    with pytest.raises(TypeError, match=r"two must define one Base subclass .*\(Alpha, B\)"):
        Plugins(name, Base, "name").found()
    (pkg / "two.py").unlink()
    (pkg / "helper.py").write_text("HELPER = 1\n")
    with pytest.raises(TypeError, match=r"helper must define one Base subclass .*\(none\)"):
        Plugins(name, Base, "name").found()
    assert set(Plugins(name, Base, "name", helpers=("base", "helper")).found().plugins) == {"alpha", "beta"}


def test_a_plugin_named_as_its_module_lives_there(family: tuple[str, Path]) -> None:
    name, pkg = family
    (pkg / "gamma.py").write_text(
        "from tests_discovery_base import Base\n\nclass G(Base):\n    name = 'delta'\n"
    )
    with pytest.raises(TypeError, match="'delta' must live in module 'gamma'"):
        Plugins(name, Base, "name", named_as_module=True).found()
    assert Plugins(name, Base, "name").found().plugins["delta"].__name__ == "G"


def test_one_key_twice_is_an_error(family: tuple[str, Path]) -> None:
    name, pkg = family
    (pkg / "gamma.py").write_text(MODULES["alpha.py"].replace("Alpha", "Gamma"))
    with pytest.raises(TypeError, match="name 'alpha' defined twice"):
        Plugins(name, Base, "name").found()


def test_a_missing_optional_library_is_listed_and_a_missing_own_module_fails(
    family: tuple[str, Path],
) -> None:
    name, pkg = family
    (pkg / "gamma.py").write_text(
        textwrap.dedent("""
            import no_such_library_here
            from tests_discovery_base import Base

            class Gamma(Base):
                name = "gamma"
        """)
    )
    found = Plugins(name, Base, "name", optional=True).found()
    assert set(found.plugins) == {"alpha", "beta"}
    assert found.unavailable == {"gamma": "needs no_such_library_here, not installed here"}
    with pytest.raises(ModuleNotFoundError):
        Plugins(name, Base, "name").found()
    (pkg / "gamma.py").unlink()
    (pkg / "epsilon.py").write_text("import testbed_no_such_part\n")
    with pytest.raises(ModuleNotFoundError, match="testbed_no_such_part"):
        Plugins(name, Base, "name", optional=True).found()


def test_found_is_remembered_until_forgotten(family: tuple[str, Path], tmp_path: Path) -> None:
    name, _ = family
    plugins = Plugins(name, Base, "name")
    first = plugins.found()
    assert plugins.found() is first
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "omega.py").write_text(
        MODULES["alpha.py"].replace("Alpha", "Omega").replace("'alpha'", "'omega'")
    )
    sys.modules[name].__path__.append(str(extra))
    assert "omega" not in plugins.found().plugins
    plugins.forget()
    assert "omega" in plugins.found().plugins


def test_a_key_with_a_dash_lives_in_a_module_with_an_underscore(family: tuple[str, Path]) -> None:
    name, pkg = family
    (pkg / "aws_lambda.py").write_text(
        MODULES["alpha.py"].replace("Alpha", "Lam").replace("'alpha'", "'aws-lambda'")
    )
    plugins = Plugins(name, Base, "name", named_as_module=True)
    assert plugins.get("aws-lambda").__name__ == "Lam"
    assert plugins.get("aws_lambda") is None, "the module's name is not the plugin's"
    assert "aws-lambda" in plugins.found().plugins
