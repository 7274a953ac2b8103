"""The site's "API reference" page, read back from the generated ``d2l`` modules.

The generated files are the single source: each saved object's docstring starts
with ``Defined in "<title>" (<page>.html).`` (written by :mod:`tabbook.library.generate`),
so this module needs no access to the sections. Objects are described with
Sphinx's Python domain (``{py:function}``, ``{py:class}``, ``{py:method}``)
under a ``{py:module}`` per framework, so book text can link to them with
``{py:func}`d2l.torch.try_gpu``` and the site's index lists them; the same name
in two frameworks does not clash because the modules differ. Pure function.
"""

from __future__ import annotations

import ast
import re

from tabbook.config import Config

# The page's path, then "." or ": ADDRESS" when the book names its site ([site] url).
_DEFINED = re.compile(r'^Defined in "(?P<title>.*)" \((?P<url>[^()]*)\.html\)(?:\.|: \S+)\s*')


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef, drop_self: bool) -> str:
    args = node.args
    if drop_self and (args.posonlyargs or args.args):
        args = ast.arguments(
            posonlyargs=args.posonlyargs[1:] if args.posonlyargs else [],
            args=args.args if args.posonlyargs else args.args[1:],
            vararg=args.vararg, kwonlyargs=args.kwonlyargs, kw_defaults=args.kw_defaults,
            kwarg=args.kwarg, defaults=args.defaults,
        )
    sig = ast.unparse(args)
    return f"{node.name}({sig})"


def _doc(node: ast.AST) -> tuple[str, str | None, str | None]:
    """(description, section title, page without .html) from a generated docstring."""
    doc = ast.get_docstring(node) or ""  # type: ignore[arg-type]
    m = _DEFINED.match(doc)
    if not m:
        return doc.strip(), None, None
    return doc[m.end():].strip(), m.group("title"), m.group("url")


def _fence(content: str, depth: int) -> str:
    """Backticks long enough for ``content`` (which may hold fences) and ``depth`` nested levels."""
    longest = max((len(r) for r in re.findall(r"`+", content)), default=0)
    return "`" * max(3 + depth, longest + 1)


def _block(kind: str, signature: str, doc: str, title: str | None, page: str | None,
           inner: list[str], depth: int, options: list[str] | None = None) -> str:
    lines = list(options or [])
    if lines:
        lines.append("")
    if doc:
        lines += [doc, ""]
    if page:
        lines += [f"Defined in {{doc}}`{title or page} </{page}>`.", ""]
    lines += inner
    content = "\n".join(lines).rstrip("\n")
    fence = _fence(content, depth)
    body = f"{content}\n" if content else ""
    return f"{fence}{{py:{kind}}} {signature}\n{body}{fence}\n"


def _methods(cls: ast.ClassDef, title: str | None, page: str | None) -> list[str]:
    out = []
    for node in cls.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if node.name.startswith("_"):
            continue
        doc, m_title, m_page = _doc(node)
        kind = "method"
        options = []
        deco = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
        if "property" in deco:
            kind = "property"
        elif "staticmethod" in deco:
            options.append(":staticmethod:")
        elif "classmethod" in deco:
            options.append(":classmethod:")
        sig = node.name if kind == "property" else _signature(node, "staticmethod" not in deco)
        # A method written in the class body is defined where the class is: say it once.
        out.append(_block(kind, sig, doc, m_title, m_page if m_page != page else None, [], 0, options))
    return out


def _objects(text: str) -> list[str]:
    """One directive per public top-level function and class of a generated module."""
    tree = ast.parse(text)
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            doc, title, page = _doc(node)
            out.append(_block("function", _signature(node, False), doc, title, page, [], 0))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            doc, title, page = _doc(node)
            init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            sig = _signature(init, True).replace("__init__", node.name, 1) if init else node.name
            methods = _methods(node, title, page)
            out.append(_block("class", sig, doc, title, page, methods, 1))
    return out


def api_reference_markdown(config: Config, files: dict[str, str]) -> str:
    """A MyST page listing, per framework, every saved object with signature, docstring and section."""
    pkg = config.library_dir.name
    lines = [
        "# API reference",
        "",
        f"Every function and class the book saves with `#@save` is collected into the `{pkg}` "
        f"package (version {config.version}), one module per framework. Use it as the book does, "
        f"importing your framework's module under the name `{pkg}` (`from {pkg} import <module> as {pkg}`, "
        "with the module named in each heading below); each entry links to the section that defines it.",
        "",
    ]
    for tab in config.tabs:
        fw = config.frameworks[tab]
        key = next((k for k in files if k.endswith(f"/{fw.module}.py")), None)
        lines += [f"## {fw.label}", "", f"```{{py:module}} {pkg}.{fw.module}", "```", ""]
        objects = _objects(files[key]) if key else []
        if not objects:
            lines += [f"The book saves no {fw.label} code yet.", ""]
        for obj in objects:
            lines += [obj]
    return "\n".join(lines).rstrip("\n") + "\n"
