"""The S2SAD_* switches added in sessions 11-12 read through envflags: a bad value
warns once and keeps the default (S2SAD_POOL=off and S2SAD_POOL_MB=abc were silently
taken as on and as 256; S2SAD_GEMM_EPILOGUE=off as on), "0" still turns each off."""
import os
import subprocess
import sys

import pytest

from s2sad import envflags, mempool
from s2sad.passes import epilogues

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(envflags, "_warned", set())


@pytest.mark.parametrize("value,want", [("0", False), ("1", True), ("", True)])
def test_the_pool_switch_reads_0_and_1(monkeypatch, value, want):
    monkeypatch.setenv("S2SAD_POOL", value)
    assert mempool._enabled() is want


@pytest.mark.parametrize("value", ["off", "false", "no"])
def test_a_bad_pool_switch_warns_and_keeps_the_pool(monkeypatch, value):
    monkeypatch.setenv("S2SAD_POOL", value)
    with pytest.warns(RuntimeWarning, match="S2SAD_POOL"):
        assert mempool._enabled() is True


@pytest.mark.parametrize("value,want", [("1", 1 << 20), ("0", 0), ("0.5", 1 << 19), ("", 256 << 20)])
def test_the_pool_cap_reads_megabytes(monkeypatch, value, want):
    monkeypatch.setenv("S2SAD_POOL_MB", value)
    assert mempool._cap_bytes() == want


@pytest.mark.parametrize("value", ["abc", "-3", "nan", "inf"])
def test_a_bad_pool_cap_warns_and_keeps_256(monkeypatch, value):
    monkeypatch.setenv("S2SAD_POOL_MB", value)
    with pytest.warns(RuntimeWarning, match="S2SAD_POOL_MB"):
        assert mempool._cap_bytes() == 256 << 20


def test_the_epilogue_switch(monkeypatch):
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "0")
    assert epilogues.enabled() is False
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "off")
    with pytest.warns(RuntimeWarning, match="S2SAD_GEMM_EPILOGUE"):
        assert epilogues.enabled() is True


def test_the_launchers_switch_is_read_at_import():
    """LAUNCHERS is read once when backends.llvm is imported: a fresh process each."""
    code = "import warnings; warnings.simplefilter('error'); import s2sad.backends.llvm as m; print(m.LAUNCHERS)"
    for value, want in (("0", "False"), ("1", "True")):
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "S2SAD_LAUNCHERS": value},
                             capture_output=True, text=True, cwd=ROOT)
        assert out.stdout.strip() == want, out.stderr
    out = subprocess.run([sys.executable, "-W", "always", "-c", "import s2sad.backends.llvm as m; print(m.LAUNCHERS)"],
                         env={**os.environ, "S2SAD_LAUNCHERS": "off"}, capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "True" and "S2SAD_LAUNCHERS" in out.stderr
