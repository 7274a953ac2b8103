"""``tabbook.library.reach``: which library definitions a unit can reach, and the key over them.

Small fixtures for each construct, then a Hypothesis property: generated libraries (functions
calling each other, classes with bases, module state) and units; one definition edited; every
unit whose *executed* code ran the edited definition gets a new key (soundness, checked by
running the unit with a profiler), and no unit that cannot reach it does (precision).
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from tabbook.library.reach import HEADER, analyse_library, changed_names, unit_reach

LIB = '''\
"""The library."""
import math

d2l = sys.modules[__name__]
SCALE = 2  # module state
HUB = dict()
d2l.HUB['a'] = ('url', 'sha')


def cpu():
    return 'cpu'


def try_gpu(i=0):
    return cpu()


class Base:
    STYLE = ('-',)

    def hello(self):
        return SCALE


class Trainer(Base):
    def fit(self):
        return try_gpu() + str(self.hello())


def download(name):
    return HUB[name]


def plot(x, device=try_gpu()):
    return x
'''


def names(cells: list[str], lib: str = LIB) -> set[str]:
    r = unit_reach(cells, lib, "d2l", "torch")
    assert r.whole is None, r.whole
    return set(r.names) - {HEADER}


def key(cells: list[str], lib: str = LIB) -> str:
    return unit_reach(cells, lib, "d2l", "torch").key


IMPORT = "from d2l import torch as d2l"


def test_names_are_closed_over_calls_bases_and_state() -> None:
    assert names([IMPORT, "d2l.Trainer().fit()"]) == {"Trainer", "Base", "SCALE", "try_gpu", "cpu"}
    assert names([IMPORT, "print(d2l.download('a'))"]) == {"download", "HUB", "try_gpu", "cpu"}
    # a definition's import-time call is header: every unit reaches what it calls
    assert names([IMPORT, "x = 1"]) == {"try_gpu", "cpu"}


def test_the_spellings_of_an_import() -> None:
    assert "download" in names(["from d2l.torch import download", "download('a')"])
    assert "download" in names(["import d2l.torch as lib", "lib.download('a')"])
    assert "download" in names(["import d2l.torch", "d2l.torch.download('a')"])
    assert "download" in names(["%timeit d2l.download('a')"])  # a magic line's code


def test_unsure_constructs_key_on_the_whole_library() -> None:
    for cells, why in [
        ([IMPORT, "getattr(d2l, 'cpu')()"], "as a value"),
        (["from d2l.torch import *"], "import *"),
        ([IMPORT, "exec('d2l.cpu()')"], "exec"),
        ([IMPORT, "f(d2l)"], "as a value"),
        (["%run other.py"], "%run"),
    ]:
        r = unit_reach(cells, LIB, "d2l", "torch")
        assert r.whole and why in r.whole, (cells, r.whole)
        assert r.key != key([IMPORT, "x = 1"])
    reflective = LIB + "\n\ndef lookup(name):\n    return getattr(d2l, name)\n"
    r = unit_reach([IMPORT, "d2l.lookup('cpu')"], reflective, "d2l", "torch")
    assert r.whole == "library code it reaches uses the module d2l as a value"
    assert unit_reach([IMPORT, "d2l.cpu()"], reflective, "d2l", "torch").whole is None


def test_edits_change_exactly_the_keys_that_reach_them() -> None:
    trainer, download = [IMPORT, "d2l.Trainer().fit()"], [IMPORT, "d2l.download('a')"]
    k_t, k_d = key(trainer), key(download)
    edited = LIB.replace("return SCALE", "return SCALE + 1")
    assert key(trainer, edited) != k_t and key(download, edited) == k_d
    edited = LIB.replace("SCALE = 2", "SCALE = 3")
    assert key(trainer, edited) != k_t and key(download, edited) == k_d
    edited = LIB.replace("('url', 'sha')", "('url2', 'sha')")  # a store into module state
    assert key(trainer, edited) == k_t and key(download, edited) != k_d
    edited = LIB.replace("import math", "import math\nimport os")  # the header: everyone
    assert key(trainer, edited) != k_t and key(download, edited) != k_d
    edited = LIB.replace("    return 'cpu'", "    return 'CPU'")  # called at import time by plot's default
    assert key(download, edited) != k_d
    comments = LIB.replace("class Trainer", "# a comment\n\n\nclass Trainer").replace("return HUB[name]", "return HUB[name]  # !")
    assert key(trainer, comments) == k_t and key(download, comments) == k_d
    # a name the unit reads that nothing defined yet: defining it changes the key
    missing = [IMPORT, "d2l.later()"]
    assert key(missing, LIB + "\n\ndef later():\n    pass\n") != key(missing)


def test_code_that_never_imports_the_library_reaches_none_of_it() -> None:
    plain = ["import math", "print(math.pi)"]
    assert key(plain) == key(plain, LIB.replace("import math", "import math\nimport os"))
    assert unit_reach(plain, LIB, "d2l", "torch").names == {}
    assert key(["d2l.cpu()"]) != key(["d2l.cpu()"], LIB.replace("return 'cpu'", "return 'CPU'"))


def test_changed_names_and_header_record() -> None:
    before = unit_reach([IMPORT, "d2l.Trainer().fit()"], LIB, "d2l", "torch").names
    after = unit_reach([IMPORT, "d2l.Trainer().fit()"], LIB.replace("return SCALE", "return -SCALE"),
                       "d2l", "torch").names
    assert changed_names(before, after) == ["Base"]
    assert HEADER in before


def test_a_library_that_does_not_parse_keys_whole() -> None:
    assert unit_reach([IMPORT], "def (", "d2l", "torch").whole.startswith("the library does not parse")
    assert analyse_library("x = 1").broken is None


# -- the property ---------------------------------------------------------------------------

PACKAGE = "hyplib"


@dataclass(frozen=True)
class Gen:
    """A generated library: functions f<i> and classes K<i>, each with the callees it calls,
    the state S<i> it reads, and (classes) a base; and units, each with the names it calls."""

    calls: tuple[tuple[int, ...], ...]  # per definition: indexes of the definitions it calls
    reads: tuple[tuple[int, ...], ...]  # per definition: indexes of state it reads
    bases: tuple[int | None, ...]  # per definition: a class's base (an earlier class), or None
    kinds: tuple[str, ...]  # "f" or "K"
    states: int
    units: tuple[tuple[int, ...], ...]  # per unit: the definitions its code calls
    spellings: tuple[int, ...]  # per unit: how it imports the library

    def name(self, i: int) -> str:
        return f"{self.kinds[i]}{i}"

    def source(self, edit: str | None = None, comments: bool = False) -> str:
        out = ["import sys", "", f"{PACKAGE} = sys.modules[__name__]"]
        for s in range(self.states):
            value = 10 + s + (1 if edit == f"S{s}" else 0)
            out.append(f"S{s} = {value}" + ("  # state" if comments else ""))
        for i, kind in enumerate(self.kinds):
            const = i + (100 if edit == self.name(i) else 0)
            body = [f"r = {const}"]
            body += [f"r += S{s}" for s in self.reads[i]]
            body += ["if d < 2:"] + [f"    r += {self.call(j)}" for j in self.calls[i]] + ["    pass"]
            if kind == "f":
                out += ["", "", f"def {self.name(i)}(d=0):"] + ["    " + b for b in body] + ["    return r"]
            else:
                base = self.bases[i]
                out += ["", "", f"class {self.name(i)}" + (f"({self.name(base)}):" if base is not None else ":")]
                if comments:
                    out.append("    # a class")
                out += ["    def m(self, d=0):"] + ["        " + b for b in body]
                if base is not None:
                    out.append("        r += super().m(d + 1)")
                out.append("        return r")
        return "\n".join(out) + "\n"

    def call(self, j: int, prefix: str = "") -> str:
        return f"{prefix}{self.name(j)}(d + 1)" if self.kinds[j] == "f" else f"{prefix}{self.name(j)}().m(d + 1)"

    def unit(self, u: int) -> list[str]:
        called = self.units[u]
        if self.spellings[u] == 0:
            lines = [f"from {PACKAGE} import torch as lib"] + [f"print({self.call(j, 'lib.')})" for j in called]
        elif self.spellings[u] == 1:
            imported = ", ".join(sorted({self.name(j) for j in called})) or "S0"
            lines = [f"from {PACKAGE}.torch import {imported}"] + [f"print({self.call(j)})" for j in called]
        else:
            lines = [f"import {PACKAGE}.torch"] + [f"print({self.call(j, PACKAGE + '.torch.')})" for j in called]
        return ["d = 0", *lines]

    def named(self, u: int) -> set[str]:
        """What unit ``u``'s code names from the library (its import line included)."""
        return {self.name(j) for j in self.units[u]} or ({"S0"} if self.spellings[u] == 1 else set())

    def closure(self, start: set[str]) -> set[str]:
        """What the generator's own graph lets a unit reach (independent of the analysis)."""
        seen: set[str] = set()
        todo = list(start)
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            if n.startswith("S"):
                continue
            i = int(n[1:])
            todo += [self.name(j) for j in self.calls[i]] + [f"S{s}" for s in self.reads[i]]
            if self.bases[i] is not None:
                todo.append(self.name(self.bases[i]))  # type: ignore[arg-type]
        return seen


@st.composite
def gens(draw: st.DrawFn) -> Gen:
    n = draw(st.integers(1, 6))
    states = draw(st.integers(1, 3))
    kinds = tuple(draw(st.sampled_from("fK")) for _ in range(n))
    calls = tuple(tuple(draw(st.lists(st.integers(0, n - 1), max_size=2, unique=True))) for _ in range(n))
    reads = tuple(tuple(draw(st.lists(st.integers(0, states - 1), max_size=1))) for _ in range(n))
    bases: list[int | None] = []
    for i, kind in enumerate(kinds):
        earlier = [j for j in range(i) if kinds[j] == "K"]
        bases.append(draw(st.sampled_from([None, *earlier])) if kind == "K" else None)
    units = tuple(tuple(draw(st.lists(st.integers(0, n - 1), max_size=3))) for _ in range(draw(st.integers(1, 4))))
    spellings = tuple(draw(st.integers(0, 2)) for _ in units)
    return Gen(calls, reads, tuple(bases), kinds, states, units, spellings)


def executed(gen: Gen, u: int, source: str) -> set[str]:
    """Run unit ``u`` against ``source`` and return the definitions (and state) its run reached."""
    code = compile(source, "<hyplib>", "exec")
    package = types.ModuleType(PACKAGE)
    module = types.ModuleType(f"{PACKAGE}.torch")
    package.torch = module  # type: ignore[attr-defined]
    saved = {k: sys.modules.get(k) for k in (PACKAGE, f"{PACKAGE}.torch")}
    sys.modules[PACKAGE], sys.modules[f"{PACKAGE}.torch"] = package, module
    ran: set[str] = set()

    def profile(frame, event, _arg):  # noqa: ANN001
        if event == "call" and frame.f_code.co_filename == "<hyplib>" and frame.f_code.co_name != "<module>":
            ran.add(frame.f_code.co_qualname.split(".")[0])

    try:
        exec(code, module.__dict__)
        sys.setprofile(profile)
        try:
            namespace: dict = {"print": lambda *a: None}  # one kernel: the cells share their globals
            for cell in gen.unit(u):
                exec(cell, namespace)
        finally:
            sys.setprofile(None)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    ran = {n for n in ran if n[0] in "fK"}
    reads = {f"S{s}" for n in ran for s in gen.reads[int(n[1:])]}
    return ran | reads


@settings(max_examples=150, deadline=None)
@given(gen=gens(), data=st.data())
def test_an_edit_stales_every_unit_that_runs_it_and_no_unit_that_cannot_reach_it(gen: Gen, data: st.DataObject
                                                                                 ) -> None:
    edited = data.draw(st.sampled_from([gen.name(i) for i in range(len(gen.kinds))]
                                       + [f"S{s}" for s in range(gen.states)]))
    before, after, commented = gen.source(), gen.source(edited), gen.source(comments=True)
    for u in range(len(gen.units)):
        cells = gen.unit(u)
        old = unit_reach(cells, before, PACKAGE, "torch")
        assert old.whole is None, old.whole
        new = unit_reach(cells, after, PACKAGE, "torch")
        reachable = gen.closure(gen.named(u))
        if edited in executed(gen, u, before):
            assert new.key != old.key, (u, edited)  # sound: what ran changed, so the unit is stale
        if edited not in reachable:
            assert new.key == old.key, (u, edited)  # precise: nothing it can reach changed
        else:
            assert new.key != old.key
        assert unit_reach(cells, commented, PACKAGE, "torch").key == old.key
