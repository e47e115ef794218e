"""Shared fixtures: a fresh store directory per test, and an open store in it."""

import pytest

import cairn


@pytest.fixture
def path(tmp_path):
    return tmp_path / "store"


@pytest.fixture
def db(path):
    with cairn.Db(path) as db:
        yield db
