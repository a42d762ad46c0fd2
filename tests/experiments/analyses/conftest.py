"""Fixtures of the analyses' tests."""
import pytest

from tests.helpers.image_fixtures import tiny_digits_bundle


@pytest.fixture(scope="module")
def image_bundle(tmp_path_factory):
    """A tiny digits image bundle (tests.helpers.image_fixtures), one per test module."""
    return tiny_digits_bundle(tmp_path_factory.mktemp("img"))
