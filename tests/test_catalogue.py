"""The method catalogue (spmlkit.catalogue): what `spml methods` lists without importing
torch is exactly what the registry holds."""
import json

from spmlkit import catalogue


def test_the_catalogue_is_the_registry():
    assert catalogue.method_rows() == catalogue.registry_rows(), (
        "src/spmlkit/catalogue.json differs from the method registry: run 'python -m spmlkit.catalogue'")


def test_names_and_rows_read_back(tmp_path):
    rows = catalogue.method_rows()
    assert catalogue.method_names() == sorted(r["name"] for r in rows)
    assert {"auto", "an", "bce", "role", "wan"} <= set(catalogue.method_names())
    out = catalogue.write_catalogue(tmp_path / "c.json")
    assert json.loads(out.read_text(encoding="utf-8"))["methods"] == rows


def test_a_stale_catalogue_is_caught(tmp_path, monkeypatch):
    """The check above is not vacuous: a method missing from the file is a difference."""
    stale = tmp_path / "c.json"
    stale.write_text(json.dumps({"methods": catalogue.method_rows()[1:]}), encoding="utf-8")
    monkeypatch.setattr(catalogue, "CATALOGUE", stale)
    assert catalogue.method_rows() != catalogue.registry_rows()


def test_a_method_registered_outside_the_package_is_not_catalogued():
    from spmlkit.methods import METHODS, Method, register_method

    @register_method("zz-plugin-test", reference="a test", family="test")
    def build():
        return Method("zz-plugin-test", "an")

    try:
        assert "zz-plugin-test" in METHODS
        assert catalogue.method_rows() == catalogue.registry_rows()
    finally:
        METHODS.remove("zz-plugin-test")
