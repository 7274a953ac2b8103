"""``make pdf`` end to end on the fixture book plus a section that exercises print.

One PDF per framework: each holds its own code, outputs and prose tabs and
none of the other framework's; figures and plots are vector art; equations,
:numref:/:eqref: and citations resolve; unsupported outputs become notes.
``make test`` installs TeX first (scripts/install-tex.sh), with or without ``CI``; a
plain ``pytest`` on a machine without TeX skips the typesetting tests, except under
``CI``, where a missing TeX fails loudly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from prerequisites import skip_unless

from tabbook.config import load_config
from tabbook.render.ext.latex import html_to_text, shorten_traceback
from tabbook.render.pdf import TOOLS, latex_failure, log_errors, pdf_paths, section_of, tex_available

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "book"

needs_tex = skip_unless(tex_available() and shutil.which("pdftotext"),
                        "TeX is not installed (make test installs it: scripts/install-tex.sh)")

PRINT_SECTION = r'''# Printing
:label:`sec_print`

The loss in :eqref:`eq_loss` is the usual one :cite:`Knuth84`, and
:numref:`sec_fixture` came before this section.

$$L(\mathbf{w}) = \frac{1}{n}\sum_{i=1}^n \left(y_i - \mathbf{w}^\top \mathbf{x}_i\right)^2$$
:eqlabel:`eq_loss`

```{.python .input}
%%tab alpha
import json as alphalib  # the alpha framework
token = "alpha_" + "Unbreakable" * 14
print(token, "+".join(str(i) for i in range(40)))
```

```{.python .input}
%%tab beta
import json as betalib  # the beta framework
print("beta" * 3)
```

:begin_tab:`beta`
Beta prose in the printing section.
:end_tab:

```{.python .input}
%%tab all
import base64
import subprocess
from IPython.display import HTML, SVG, Javascript, display

svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="160" height="60">'
       '<rect x="4" y="4" width="152" height="52" fill="#cde" stroke="#234"/></svg>')
display(SVG(svg))
display(HTML('<table><tr><th>epoch</th><th>loss</th></tr><tr><td>1</td><td>0.25</td></tr></table>'))
display(Javascript('console.log(1)'))
pdf = subprocess.run(['rsvg-convert', '-f', 'pdf'], input=svg.encode(), capture_output=True).stdout
display({'image/svg+xml': svg, 'application/pdf': base64.b64encode(pdf).decode(),
         'text/plain': '<Figure size 160x60>'}, raw=True)
```

## Exercises

1. Print the answer.

<!-- solution 1 -->
Worked solution prose that stays on the website.

```{.python .input}
%%tab all
print('SolutionOutput' * 2)
```
<!-- end solution -->
'''

BIB = """@book{Knuth84,
  author = {Donald E. Knuth},
  title = {The Art of Computer Programming},
  publisher = {Addison-Wesley},
  year = {1984},
}
"""


def make_book(dest: Path) -> Path:
    shutil.copytree(FIXTURE, dest)
    (dest / "print.md").write_text(PRINT_SECTION, encoding="utf-8")
    (dest / "references.bib").write_text(BIB, encoding="utf-8")
    index = dest / "index.md"
    index.write_text(index.read_text().replace("sec\n```", "sec\nprint\n```"), encoding="utf-8")
    return dest


def run_pdf(book: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tabbook", "-C", str(book), "pdf", *args],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TABBOOK_CACHE": str(book / ".cache")},
    )


def pdftext(path: Path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    book = make_book(tmp_path_factory.mktemp("pdf") / "book")
    proc = run_pdf(book)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return book


@needs_tex
def test_one_pdf_per_framework_with_only_its_code(book: Path) -> None:
    paths = pdf_paths(load_config(book))
    assert set(paths) == {"alpha", "beta"}
    assert [p.name for p in paths.values()] == ["fixture-alpha.pdf", "fixture-beta.pdf"]
    text = {fw: pdftext(p) for fw, p in paths.items()}
    assert "import json as alphalib" in text["alpha"] and "betalib" not in text["alpha"]
    assert "import json as betalib" in text["beta"] and "alphalib" not in text["beta"]
    assert "framework: alpha" in text["alpha"] and "framework: beta" not in text["alpha"]
    assert "Alpha-only prose." in text["alpha"] and "Beta-only prose." not in text["alpha"]
    assert "Beta prose in the printing section." in text["beta"]
    assert "def double" in text["beta"] and "def double" not in text["alpha"]
    for fw, other in (("alpha", "Beta"), ("beta", "Alpha")):
        assert "Shared prose that refers to Figure 1.1" in text[fw]  # shared prose, numref
        assert f"{other} outputs computed" not in text[fw]  # provenance of this framework only
        assert f"{fw.capitalize()} edition" in text[fw]  # title page
        assert "Version 0.0.1" in text[fw]
        assert "ZeroDivisionError" in text[fw]  # the expected error's traceback
        assert "Print the answer." in text[fw]  # the exercise is in the PDF, its solution is not
        assert "Worked solution" not in text[fw] and "SolutionOutput" not in text[fw]
        assert "Solution 1" not in text[fw]


@needs_tex
def test_typeset_book_features(book: Path) -> None:
    text = pdftext(pdf_paths(load_config(book))["alpha"])
    assert "Contents" in text
    assert "(2.1)" in text  # numbered equation, and :eqref: resolves to it
    assert "in (2.1) is the usual one" in " ".join(text.split())
    assert "Knuth" in text and "Addison-Wesley" in text  # bibliography
    assert "??" not in text  # no dangling reference
    joined = "".join(text.replace("\u21aa", "").split())  # without continuation marks
    assert "Unbreakable" * 14 in joined  # long line wrapped, never cut
    assert "epoch loss" in " ".join(text.split())  # HTML output converted to text
    assert "online version" in text  # JavaScript output replaced by a note
    tex = (book / "build" / "latex" / "alpha" / "book.tex").read_text()
    assert "sd-tab-label" not in tex and "Alpha}" not in tex.split("\\begin{document}")[1][:200]
    # every picture is vector: no raster image anywhere in the PDF
    images = subprocess.run(["pdfimages", "-list", str(pdf_paths(load_config(book))["alpha"])],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(images) == 2, images  # the header lines only
    assert ".svg}" not in tex and ".png}" not in tex


@needs_tex
def test_rebuild_from_a_current_store_starts_no_kernel_and_reads_nothing(book: Path) -> None:
    paths = pdf_paths(load_config(book))
    paths["beta"].unlink()
    proc = run_pdf(book, "--frozen", "--frameworks", "beta")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert paths["beta"].is_file()
    units = json.loads((book / "build" / "report.json").read_text())["units"]
    assert units and {u["status"] for u in units} == {"reused"}
    # One doctree cache serves every framework: switching tabbook_framework back and
    # forth (alpha, then beta) makes Sphinx read nothing again.
    doctrees = sorted((book / "build" / "doctrees" / "latex").glob("*.doctree"))
    before = [d.stat().st_mtime_ns for d in doctrees]
    proc = run_pdf(book, "--frozen")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [d.stat().st_mtime_ns for d in doctrees] == before


@needs_tex
def test_latex_failure_names_section_and_log_excerpt(book: Path) -> None:
    config = load_config(book)
    tex = book / "build" / "latex" / "alpha" / "book.tex"
    text = tex.read_text()
    body = text.index("\\label{\\detokenize{print::doc}}")
    broken = text[:body] + "\\label{\\detokenize{print::doc}}\\undefinedmacro{}" + text[body + 31:]
    tex.write_text(broken)
    proc = subprocess.run(["latexmk", "-xelatex", "-interaction=nonstopmode", "-halt-on-error",
                           "-file-line-error", "book.tex"], cwd=tex.parent, capture_output=True, text=True)
    assert proc.returncode != 0
    err = latex_failure(config, "alpha", tex, tex.with_suffix(".log").read_text(), "")
    message = err.location_message()
    assert message.startswith("print.md: [alpha] LaTeX failed on build/latex/alpha/book.tex")
    assert "Undefined control sequence" in message and "\\undefinedmacro" in message
    assert "full log: build/latex/alpha/book.log" in message


def path_without(tools: tuple[str, ...], dest: Path) -> str:
    """A PATH with every program of this one but ``tools``: a machine where they are not installed."""
    dest.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not Path(folder).is_dir():
            continue
        for program in Path(folder).iterdir():
            if program.name not in tools and not (dest / program.name).exists() and os.access(program, os.X_OK):
                (dest / program.name).symlink_to(program)
    return str(dest)


def test_without_tex_the_books_own_problems_come_first_then_what_to_install(tmp_path: Path) -> None:
    """No TeX (hidden from the PATH): ``tabbook pdf`` names the missing programs and how to get
    them, after the book's own problems, and leaves no PDF, LaTeX file or freeze entry behind."""
    book = make_book(tmp_path / "book")
    env_path = path_without(TOOLS, tmp_path / "bin")
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "tabbook", "-C", str(book), "pdf", *args], cwd=ROOT, capture_output=True,
        text=True, env={**os.environ, "PATH": env_path, "PYTHONPATH": str(ROOT),
                        "TABBOOK_CACHE": str(book / ".cache")})
    proc = run()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"cannot build PDFs: {', '.join(TOOLS)} not found; run scripts/install-tex.sh" in proc.stderr
    assert not (book / "build" / "pdf").exists() and not (book / "build" / "latex").exists()
    assert not (book / "_freeze").exists()  # nothing executed for a build that cannot finish

    page = book / "print.md"
    page.write_text(page.read_text() + "\nSee :numref:`sec_nowhere`.\n", encoding="utf-8")
    proc = run()
    line = page.read_text().splitlines().index("See :numref:`sec_nowhere`.") + 1
    # d2lbook's contract: a warning, said before what to install
    assert proc.returncode == 1 and f"warning: print.md:{line}:" in proc.stdout, proc.stdout + proc.stderr
    assert "cannot build PDFs" in proc.stderr
    # a strict book: its problem is the error, before TeX is asked for
    config = book / "config.ini"
    config.write_text(config.read_text().replace("[build]\n", "[build]\nwarning_is_error = True\n", 1))
    assert "warning_is_error" in config.read_text()
    proc = run()
    assert proc.returncode == 1
    assert f"print.md:{line}:" in proc.stderr and "sec_nowhere" in proc.stderr, proc.stderr
    assert "cannot build PDFs" not in proc.stderr


def test_log_errors_pick_error_lines_and_context() -> None:
    log = "\n".join([
        "(./book.tex", "Some noise", "./book.tex:42: Undefined control sequence.",
        "l.42 \\foo", "        {bar}", "", "more noise",
        "! LaTeX Error: File `missing.sty' not found.", "", "Type X to quit.",
    ])
    errors = log_errors(log)
    assert [e.tex_line for e in errors] == [42, None]
    assert errors[0].excerpt.splitlines() == ["./book.tex:42: Undefined control sequence.", "l.42 \\foo",
                                              "        {bar}"]
    assert errors[1].excerpt == "! LaTeX Error: File `missing.sty' not found."


def test_section_of_finds_the_document_that_wrote_a_line() -> None:
    tex = "\n".join(["\\begin{document}", "\\label{\\detokenize{index::doc}}", "x",
                     "\\label{\\detokenize{chapter/one::doc}}", "y", "z"])
    assert section_of(tex, 3) == "index"
    assert section_of(tex, 6) == "chapter/one"
    assert section_of(tex, 1) is None


def test_html_output_becomes_text_for_print() -> None:
    html = ("<style>td {color: red}</style><table><tr><th>epoch</th><th>loss</th></tr>"
            "<tr><td>1</td><td> 0.25 </td></tr></table><script>alert(1)</script><p>done <b>now</b></p>")
    assert html_to_text(html) == "epoch  loss\n1  0.25\ndone now"


def test_long_tracebacks_keep_the_books_frame_and_the_error() -> None:
    frames = [f"File lib/mod{i}.py:{i}, in f{i}()\n---> {i} g()\n" for i in range(5)]
    tb = "\n".join(["-" * 20, "RuntimeError     Traceback (most recent call last)",
                    "Cell In[7], line 5\n----> 5 a + b\n", *frames, "RuntimeError: devices differ"])
    short = shorten_traceback(tb + "\n")
    assert short.splitlines() == ["-" * 20, "RuntimeError     Traceback (most recent call last)",
                                  "Cell In[7], line 5", "----> 5 a + b", "",
                                  "[... 5 frames inside the library omitted in print ...]", "",
                                  "RuntimeError: devices differ"]
    two = "Cell In[1], line 1\n----> 1 1 / 0\n\nZeroDivisionError: division by zero"
    assert shorten_traceback(two) == two


@needs_tex
def test_a_missing_image_is_a_placeholder_in_the_pdf_and_one_warning(tmp_path: Path) -> None:
    """Issue 52: the HTML build warns about a missing image and goes on; xelatex stopped at
    ``Unable to load picture`` and there was no PDF. Now the PDF shows a note where the figure
    is, the warning is said once at the Markdown line, and no raw Sphinx line (naming
    ``build/src/…``) repeats it."""
    book = tmp_path / "book"
    book.mkdir()
    (book / "config.ini").write_text("[project]\nname = lost\n\n[build]\nnotebooks = *.md\n")
    (book / "index.md").write_text("# Lost\n\n```toc\n:numbered:\n\npage\n```\n")
    (book / "page.md").write_text("# Page\n\nBefore.\n\n![Gone.](img/none.png)\n:width:`200px`\n\n"
                                  "Inline ![x](img/gone.png) too.\n")
    proc = run_pdf(book)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said
    assert said.count("page.md:5: image file img/none.png does not exist [missing-image]") == 1, said
    assert said.count("page.md:8: image file img/gone.png does not exist [missing-image]") == 1, said
    assert "build/src" not in said, said
    text = pdftext(book / "build" / "pdf" / "lost-python.pdf")
    assert "missing image: img/none.png" in text and "missing image: img/gone.png" in text


@needs_tex
def test_a_citation_in_a_figure_caption_typesets(tmp_path: Path) -> None:
    """A ``:cite:`` in a caption became ``\\hyperlink`` inside ``\\caption`` (a moving argument,
    written to the list of figures), where LaTeX stopped with "Undefined control sequence" and
    there was no PDF; the chapter's figures had to name their sources in words."""
    book = tmp_path / "book"
    (book / "img").mkdir(parents=True)
    shutil.copy(ROOT / "img" / "async-timeline.svg", book / "img" / "t.svg")
    (book / "config.ini").write_text("[project]\nname = cited\n\n[build]\nnotebooks = *.md\n")
    (book / "refs.bib").write_text("@misc{doe2026,\n  title = {A demonstration},\n  author = {Doe, Jane},\n"
                                   "  year = {2026}\n}\n")
    (book / "index.md").write_text("# Cited\n\n```toc\n:numbered:\n\npage\n```\n")
    (book / "page.md").write_text("# Page\n\n![A timeline, after :cite:`doe2026`.](img/t.svg)\n:label:`fig_t`\n\n"
                                  "See :numref:`fig_t`.\n\n:bibliography:`refs.bib`\n")
    proc = run_pdf(book)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = pdftext(book / "build" / "pdf" / "cited-python.pdf")
    assert "A timeline, after [Doe, 2026]." in text, text
