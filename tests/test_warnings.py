"""Warnings where they belong (issue 30, item 5): a bib entry's data is a warning at its line.

sphinxcontrib-bibtex reports a problem with an entry (a field its style needs is missing) at
the ``{bibliography}`` directive, on a page the builder may have generated; the author wrote
the bib file. So it is reported at ``refs.bib:LINE`` of the entry, as a ``warning:`` that fails
the build only under ``--strict`` or ``[build] warning_is_error`` (d2lbook's key, Sphinx's
``-W``); the generated references page lists the entries the book cites, not every entry.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_d2lbook_build import make_book, tabbook

from tabbook.config import load_config
from tabbook.render.diagnostics import bib_entry_line, collect

BIB = """\
@book{knuth84,
  title = {The TeXbook},
  author = {Knuth, D.},
  publisher = {AW},
  year = {1984}
}

@book{nopub74,
  title = {A Book Without Publisher},
  author = {Someone, A.},
  year = {1974}
}

@book{uncited99,
  title = {Cited Nowhere, Also Without Publisher},
  author = {Nobody, N.},
  year = {1999}
}
"""


def _cite(book: Path) -> None:
    (book / "mini.bib").write_text(BIB)
    page = book / "chapter_a" / "second.md"
    page.write_text(page.read_text().replace(":label:`sec_second`\n", ":label:`sec_second`\n\nSee :cite:`knuth84,nopub74`.\n", 1))


def test_a_bib_warning_is_located_at_the_entry_and_judged_by_strictness(tmp_path: Path) -> None:
    book, _ = make_book(tmp_path)
    _cite(book)
    config = load_config(book)
    records = tmp_path / "records.json"
    records.write_text(json.dumps([
        {"level": "WARNING", "location": str(book / "build" / "src" / "references.md") + ":3",
         "message": "missing publisher in nopub74", "type": "bibtex", "subtype": "missing_field"},
        {"level": "WARNING", "location": None, "message": 'could not find bibtex key "nokey"',
         "type": "bibtex", "subtype": "key_not_found"},
    ]))
    assert bib_entry_line(book / "mini.bib", "nopub74") == 8
    found = collect(config, records, mark=False)
    # d2lbook's contract: both are built past (a lost citation shows its key), each of its kind
    assert [w.shown() for w in found.warnings] == [
        "Sphinx: citation 'nokey' is in no bib file the book names ([pdf] bibfile, or a :bibliography: line "
        "naming one): shown as its key [missing-citation]",
        "mini.bib:8: missing publisher in nopub74 [bibtex.missing_field] [bib-data]"]
    assert found.errors == []
    strict = collect(config, records, strict=True, mark=False)
    assert not strict.warnings and len(strict.errors) == 2


def test_a_bib_entry_without_a_field_warns_at_its_line_and_fails_only_a_strict_build(tmp_path: Path) -> None:
    book, overlay = make_book(tmp_path)
    _cite(book)
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    warning = "warning: mini.bib:8: missing publisher in nopub74 [bibtex.missing_field]"
    assert warning in proc.stdout
    assert "references.md" not in proc.stdout + proc.stderr  # never the page the builder wrote
    assert "uncited99" not in proc.stdout  # not cited: not listed, not checked
    refs = (book / "build" / "html" / "references.html").read_text()
    assert "The TeXbook" in refs and "Cited Nowhere" not in refs
    # A no-op build shows the same output, so the same warnings; --strict fails on them.
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0 and warning in proc.stdout and "nothing changed" in proc.stdout
    proc = tabbook(book, overlay, "build", "--strict")
    assert proc.returncode == 1
    assert "mini.bib:8: missing publisher in nopub74 [bibtex.missing_field]" in proc.stderr
    # d2lbook's [build] warning_is_error says the same in config.ini.
    config = book / "config.ini"
    config.write_text(config.read_text().replace("[build]\n", "[build]\nwarning_is_error = True\n", 1))
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 1 and "mini.bib:8: missing publisher" in proc.stderr
    # Fixed in the bib file, the strict build passes.
    (book / "mini.bib").write_text(BIB.replace("  year = {1974}", "  publisher = {P},\n  year = {1974}"))
    proc = tabbook(book, overlay, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning:" not in proc.stdout
