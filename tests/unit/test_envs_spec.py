"""Parsing and hashing environment files, with no I/O (prsd/envs/spec.py, firstline.py)."""

from __future__ import annotations

import pytest

from prsd.envs.build import FULL_BELOW_BYTES, disk_note
from prsd.envs.firstline import first_error_line
from prsd.envs.spec import EnvError, Pin, parse_conda, parse_pin, parse_requirements

CONDA = """\
name: figlet
channels: [conda-forge, defaults]
dependencies:
  - python=3.11
  - pip
  - conda-forge::numpy=1.26=py311_0
  - pandas>=2
  - scikit-learn 1.4
  - pip:
    - pyfiglet==1.0.4
"""


def test_conda_file_read_as_pypi_requirements() -> None:
    """python is the pin, pip is skipped, conda packages become PyPI requirements."""
    spec = parse_conda(CONDA)
    assert spec.python == Pin((3, 11))
    assert spec.pip == ("numpy==1.26.*", "pandas>=2", "scikit-learn==1.4.*", "pyfiglet==1.0.4")
    assert spec.from_conda == ("numpy==1.26.*", "pandas>=2", "scikit-learn==1.4.*")
    assert spec.channels == ("conda-forge", "defaults")
    assert spec.text == CONDA


def test_key_depends_on_what_is_installed_only() -> None:
    """Name, comments and the order of conda packages do not change the key; packages do."""
    same = CONDA.replace("name: figlet", "name: other  # renamed").replace(
        "  - pandas>=2\n  - scikit-learn 1.4\n", "  - scikit-learn 1.4\n  - pandas>=2\n"
    )
    key = parse_conda(CONDA).key("/usr/bin/python3.11 (3, 11, 2)")
    assert parse_conda(same).key("/usr/bin/python3.11 (3, 11, 2)") == key
    assert parse_conda(CONDA).key("/opt/py/bin/python3.11 (3, 11, 9)") != key
    changed = CONDA.replace("pyfiglet==1.0.4", "pyfiglet==1.0.3")
    assert parse_conda(changed).key("/usr/bin/python3.11 (3, 11, 2)") != key


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("dependencies: [python=3.11\n", "not valid YAML (line 2)"),
        ("- just a list\n", "must be a mapping with 'dependencies', got list"),
        ("dependencies: numpy\n", "'dependencies' must be a list, got str"),
        ("dependencies: [3]\n", "a dependency must be a string"),
        ("dependencies: ['python<4']\n", "cannot read the python pin '<4'"),
        ("dependencies: [{pip: ['--index-url http://x']}]\n", "pip options such as --index-url"),
        ("dependencies: [{pip: ['x @ https://h/x.whl']}]\n", "URLs, paths and 'name @ url'"),
        ("dependencies: [{pip: ['/root/secret.whl']}]\n", "is not a package name"),
        ("dependencies: ['numpy @ https://h/n.whl']\n", "is not a package name"),
        ("dependencies: [{pip: ['./local/pkg']}]\n", "is not a package name"),
        ("dependencies: [{pip: ['git+https://h/r.git']}]\n", "is not a package name"),
    ],
)
def test_bad_conda_files(text: str, fragment: str) -> None:
    with pytest.raises(EnvError, match=None) as info:
        parse_conda(text, "conda.yml")
    assert fragment in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "line",
    [
        "pyfiglet==1.0.4",
        "requests[socks,security] >=2.31, <3",
        "numpy==1.26.*",
        "torch~=2.1",
        "pywin32; sys_platform == 'win32'",
        "zope.interface",
    ],
)
def test_requirements_allowed(line: str) -> None:
    assert parse_requirements(line + "\n").pip == (line,)


def test_requirements_file() -> None:
    """Comments and blank lines skipped; ``# python=3.11`` pins; options refused."""
    spec = parse_requirements("# python=3.11\n\npyfiglet==1.0.4  # fonts\nrich>=13\n")
    assert (spec.kind, spec.python, spec.pip) == (
        "requirements",
        Pin((3, 11)),
        ("pyfiglet==1.0.4", "rich>=13"),
    )
    with pytest.raises(EnvError, match="line 2: options such as -r are not allowed"):
        parse_requirements("rich\n-r other.txt\n", "requirements.txt")


@pytest.mark.parametrize(
    ("text", "pin"),
    [
        ("=3.11", Pin((3, 11))),
        ("==3.11.4", Pin((3, 11, 4))),
        ("3.10", Pin((3, 10))),
        ("=3.11=h123_0", Pin((3, 11))),
        ("3.11.*", Pin((3, 11))),
        (">=3.9", Pin((3, 9), at_least=True)),
    ],
)
def test_python_pins(text: str, pin: Pin) -> None:
    assert parse_pin(text, "x") == pin


def test_pin_matching() -> None:
    assert Pin((3, 11)).matches((3, 11, 7)) and not Pin((3, 11)).matches((3, 12, 1))
    assert Pin((3, 9), at_least=True).matches((3, 12, 0))
    assert not Pin((3, 11, 4)).matches((3, 11, 7))


def test_first_error_line_of_uv_and_conda() -> None:
    """The tool's own first error line, with its cause joined on."""
    uv = (
        "Using Python 3.11.7 environment at: x\n"
        "error: No solution found when resolving dependencies\n"
        "  cause: Because nope was not found in the package registry, ...\n"
    )
    assert first_error_line(uv) == (
        "error: No solution found when resolving dependencies: "
        "Because nope was not found in the package registry, ..."
    )
    chain = (
        "error: Failed to download `pyfiglet==1.0.4`\n"
        "  cause: Failed to extract archive: pyfiglet-1.0.4-py3-none-any.whl\n"
        "  cause: failed to write to file `/c/x.tlf`: No space left on device (os error 28)\n"
    )
    assert first_error_line(chain) == (
        "error: Failed to download `pyfiglet==1.0.4`: "
        "failed to write to file `/c/x.tlf`: No space left on device (os error 28)"
    )
    boxed = "  \x1b[31m×\x1b[0m No solution found when resolving dependencies:\n  ╰─▶ Because x\n"
    assert first_error_line(boxed) == "× No solution found when resolving dependencies: Because x"
    conda = "Collecting package metadata: done\nPackagesNotFoundError: The following packages are not available\n"
    assert first_error_line(conda).startswith("PackagesNotFoundError: The following")
    assert first_error_line("some output\nlast words\n") == "last words"


def test_a_nearly_full_disk_is_named_when_the_tools_error_lost_it() -> None:
    assert disk_note(FULL_BELOW_BYTES, "/var/cache/prsd") == ""
    assert disk_note(512 * 1024, "/var/cache/prsd") == (
        " (the disk holding /var/cache/prsd is full: 512 KiB free)"
    )
