"""The project around the file: imports resolved on disk per language (fixtures/project), files that are never
read (secrets, ignored files), the ring of recent code, and how it all reaches the prompt's head and stays there
while the cursor moves in a function."""
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FIXTURES
from lsp_server.context import files as files_mod
from lsp_server.context.assemble import DefinitionIndex, DocumentFiles, gather
from lsp_server.context.document import Document
from lsp_server.context.exclude import Excluder, is_secret
from lsp_server.context.files import find_root, read_source
from lsp_server.context.imports import Project, candidates, project_for
from lsp_server.context.imports import resolve as resolve_mod
from lsp_server.context.ring import Ring, similarity
from lsp_server.engine.vocab import FimTokens
from lsp_server.prompt import PromptBudget, PromptParts, build_fast_prompt, build_prompt
from lsp_server.service.settings import Settings

PROJECT = FIXTURES / "project"


@pytest.fixture(autouse=True)
def fresh_caches():
    files_mod.clear_caches()
    resolve_mod._projects.clear()
    yield
    files_mod.clear_caches()
    resolve_mod._projects.clear()


def resolved(root: Path, rel: str) -> tuple[Project, list]:
    p = Project(str(root))
    doc = Document.read(str(root / rel))
    return p, p.imports(doc.path, doc.text, doc.language)


def shown(p: Project, imports) -> list[tuple[str, tuple, str | None, bool]]:
    return [(p.shown(i.path), i.names, i.alias, i.star) for i in imports]


def cursor_after(doc: Document, marker: str) -> tuple[int, int]:
    lines = doc.text.split("\n")
    line = next(i for i, l in enumerate(lines) if marker in l)
    return line, lines[line].index(marker) + len(marker)


# ---- import resolution per language -----------------------------------------------------------------------------

def test_python_imports_relative_absolute_src_layout_and_reexports():
    root = PROJECT / "python"
    p, imps = resolved(root, "src/shop/cart.py")
    assert shown(p, imps) == [
        ("src/shop/tax.py", (), "tax", False),                                 # import shop.tax as tax (src/)
        ("src/shop/util/text.py", (("money", "money"),), None, False),        # from shop.util.text import money
        ("src/shop/models.py", (("Item", "Item"),), None, False),             # from .models import Item
        ("src/shop/pricing.py", (("apply_voucher", "apply_voucher"),), None, False),
    ]
    p, imps = resolved(root, "src/shop/report.py")
    # `from shop import Cart`: the package's __init__.py; `from . import pricing`: a submodule, by its name
    assert shown(p, imps) == [("src/shop/__init__.py", (("Cart", "Cart"),), None, False),
                              ("src/shop/pricing.py", (), "pricing", False)]
    found = {(c.definition.name, p.shown(c.definition.path)) for c in candidates(p, imps)}
    # Cart is re-exported by __init__.py: followed to the module that defines it
    assert ("Cart", "src/shop/cart.py") in found and ("loyalty_discount", "src/shop/pricing.py") in found


def test_typescript_relative_index_and_tsconfig_paths():
    root = PROJECT / "ts"
    p, imps = resolved(root, "src/app/main.ts")
    assert shown(p, imps) == [
        ("src/lib/format.ts", (("formatPrice", "formatPrice"),), None, False),   # "@lib/*" in paths
        ("src/model/cart.ts", (("Cart", "Cart"),), None, False),                 # ../model/cart -> .ts
        ("src/model/index.ts", (), "model", False),                              # "@model": an exact path
        ("src/widgets/index.tsx", (("Badge", "Badge"),), None, False),           # ../widgets -> index.tsx
    ]
    # the barrel's re-exports are the namespace's names
    via_model = {c.definition.name for c in candidates(p, imps) if c.alias == "model"}
    assert via_model == {"Cart", "CartLine"}


def test_typescript_jsonc_and_js_extensions(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "tsconfig.json").write_text('{\n // a comment "with quotes"\n "compilerOptions": {"baseUrl": "src",'
                                            ' /* block */ "x": "http://a//b",},\n}\n')
    (tmp_path / "src" / "util.ts").write_text("export const one = 1;\n")
    (tmp_path / "src" / "esm.ts").write_text("export const two = 2;\n")
    (tmp_path / "src" / "main.ts").write_text('import { one } from "util";\nimport { two } from "./esm.js";\n')
    p, imps = resolved(tmp_path, "src/main.ts")
    assert [p.shown(i.path) for i in imps] == ["src/util.ts", "src/esm.ts"]   # baseUrl; .js names the .ts


def test_go_module_packages_without_tests_and_the_own_package():
    root = PROJECT / "go"
    p, imps = resolved(root, "cmd/shop/main.go")
    assert shown(p, imps) == [
        ("pricing/pricing.go", (), "pricing", False),     # not pricing_test.go; "fmt" is not the module's
        ("store/store.go", (), "st", False),              # an import's own name
        ("cmd/shop/flags.go", (), None, True),            # the same package: names used without an import
    ]
    names = {c.definition.name for c in candidates(p, imps)}
    assert {"ApplyVoucher", "Store", "New", "Reserve", "verbose"} <= names and "TestOnlyInTests" not in names


def test_rust_mod_and_use_crate_self_super():
    root = PROJECT / "rust"
    p, imps = resolved(root, "src/main.rs")
    assert shown(p, imps) == [
        ("src/cart.rs", (), "cart", False),                                   # mod cart;
        ("src/pricing/mod.rs", (), "pricing", False),                         # mod pricing; (a folder)
        ("src/cart.rs", (("Cart", "Cart"),), None, False),                    # use crate::cart::Cart
        ("src/pricing/rates.rs", (("vat_rate", "vat_rate"),), None, False),   # use crate::pricing::rates::{..}
        ("src/pricing/rates.rs", (("LOYALTY", "LOYALTY"),), None, False),
    ]
    p, imps = resolved(root, "src/pricing/mod.rs")
    assert shown(p, imps) == [("src/pricing/rates.rs", (), "rates", False),   # pub mod rates; next to mod.rs
                              ("src/cart.rs", (("Cart", "Cart"),), None, False)]   # use super::cart::Cart
    # a struct and its impl block go by one name: both are shown
    texts = [c.definition.text for c in candidates(p, imps) if c.definition.name == "Cart"]
    assert any("pub struct Cart" in t for t in texts) and any("pub fn add(" in t for t in texts)


def test_find_root_takes_the_nearest_project_folder():
    assert find_root(str(PROJECT / "go" / "cmd" / "shop" / "main.go")) == str(PROJECT / "go")
    assert find_root(str(PROJECT / "python" / "src" / "shop" / "cart.py")) == str(PROJECT / "python")


# ---- what is never read -------------------------------------------------------------------------------------------

def test_secret_list_cannot_be_turned_off():
    for name in (".env", ".env.local", "server.pem", "tls.key", "id_rsa", "id_rsa.pub", "id_ed25519", "cert.p12",
                 "cert.pfx", "credentials.json", "release.keystore", ".netrc", ".npmrc", ".pypirc", "secrets.py",
                 "credentials/aws.py"):
        assert is_secret(f"/w/{name}") and Excluder(None).excluded(f"/w/{name}"), name
    assert not is_secret("/w/shop/keys.py") and not is_secret("/w/environment.py")


def secret_project(tmp_path: Path) -> Path:
    """The Python fixture with files it imports that must never be read: secrets, an ignored file, a file
    .tandemignore names, a file outside the root, a large file and a binary one."""
    root = tmp_path / "repo"
    shutil.copytree(PROJECT / "python", root)
    pkg = root / "src" / "shop"
    (root / ".gitignore").write_text("local_*.py\nbuild/\n")
    (root / ".tandemignore").write_text("generated_*.py\n")
    (root / ".env").write_text("API_TOKEN = 'env-secret-1'\n")
    (pkg / "id_rsa.py").write_text("KEY = 'rsa-secret-2'\n")                  # a secret's name, whatever its suffix
    (pkg / "secrets.py").write_text("TOKEN = 'secrets-secret-3'\n")
    (pkg / "local_settings.py").write_text("PASSWORD = 'ignored-secret-4'\n")  # .gitignore
    (pkg / "generated_api.py").write_text("def call():\n    return 'tandemignore-secret-5'\n")
    (pkg / "build").mkdir()
    (pkg / "build" / "out.py").write_text("OUT = 'ignored-dir-secret-6'\n")
    (tmp_path / "outside.py").write_text("OUTSIDE = 'outside-secret-7'\n")
    os.symlink(tmp_path / "outside.py", pkg / "linked.py")                     # a link that leads out of the root
    (pkg / "big.py").write_text("BIG = 1\n" + "# padding\n" * 40000)           # over 256 KiB
    (pkg / "blob.py").write_bytes(b"BLOB = 1\n\0\0\0")
    (pkg / "app.py").write_text(
        "from .id_rsa import KEY\nfrom .secrets import TOKEN\nfrom .local_settings import PASSWORD\n"
        "from .generated_api import call\nfrom .build.out import OUT\nfrom .linked import OUTSIDE\n"
        "from .big import BIG\nfrom .blob import BLOB\nfrom .pricing import apply_voucher\n\n\n"
        "def run():\n    return KEY, TOKEN, PASSWORD, call(), OUT, OUTSIDE, BIG, BLOB, apply_voucher(\n")
    return root


def test_excluded_files_are_never_opened(tmp_path, monkeypatch):
    root = secret_project(tmp_path)
    opened: list[str] = []
    real = files_mod._read_file
    monkeypatch.setattr(files_mod, "_read_file", lambda path: opened.append(path) or real(path))
    doc = Document.read(str(root / "src" / "shop" / "app.py"))
    env_doc = Document(str(root / "src" / "shop" / "secrets.py"), "TOKEN = 'open-secret-8'\n")   # open in the editor
    ring = Ring()
    ring.add(str(root / ".env"), "API_TOKEN = 'ring-secret-9'\n" * 3, 0, "edit")
    line, col = cursor_after(doc, "apply_voucher(")
    ctx = gather(doc, line, col, [env_doc], DefinitionIndex(), 1024, DocumentFiles(), root=str(root),
                 recent=ring.chunks())
    head = "\n".join(f"{p}\n{t}" for p, t in ctx.files)
    assert "def apply_voucher(" in head                      # what may be read is read
    assert "secret" not in head, head
    names = {os.path.basename(p) for p in opened}
    assert names <= {"pricing.py", "big.py", "blob.py"}, names   # big.py and blob.py: opened, found unfit
    assert not {"id_rsa.py", "secrets.py", ".env", "local_settings.py", "generated_api.py", "out.py", "linked.py",
                "outside.py"} & names
    ex = Excluder(str(root))
    for f in (".env", "src/shop/id_rsa.py", "src/shop/local_settings.py", "src/shop/generated_api.py",
              "src/shop/build/out.py", "src/shop/linked.py"):
        assert ex.excluded(str(root / f)) and read_source(str(root / f), ex) is None, f
    assert read_source(str(root / "src" / "shop" / "big.py"), ex) is None       # too large: not read whole
    assert read_source(str(root / "src" / "shop" / "blob.py"), ex) is None      # binary
    assert not ex.excluded(str(root / "src" / "shop" / "pricing.py"))


def test_the_users_own_rules_refuse_completion_where_gitignore_only_keeps_files_out_of_context(tmp_path):
    """Excluder.by_user: what gets no completion (the secret list, the exclude setting's patterns, .tandemignore);
    a file .gitignore names is still completed in, only never read as context; the setting reaches the reads."""
    (tmp_path / ".gitignore").write_text("local_*.py\n")
    (tmp_path / ".tandemignore").write_text("generated/\n")
    ex = Excluder(str(tmp_path), ("*.gen.ts", "vendor/big/"))
    assert ex.by_user(str(tmp_path / "generated" / "api.py"))          # .tandemignore, a folder
    assert ex.by_user(str(tmp_path / "web" / "types.gen.ts"))          # a name pattern, anywhere below the root
    assert ex.by_user(str(tmp_path / "vendor" / "big" / "x.py"))       # a folder pattern of the setting
    assert ex.by_user(str(tmp_path / ".env"))
    assert Excluder(str(tmp_path), ("!.env",)).by_user(str(tmp_path / ".env"))   # no pattern takes a secret back
    assert not ex.by_user(str(tmp_path / "local_settings.py")) and ex.excluded(str(tmp_path / "local_settings.py"))
    assert not ex.by_user(str(tmp_path / "vendor" / "small.py")) and not ex.by_user(str(tmp_path / "src" / "a.py"))
    assert ex.by_user("/elsewhere/x.gen.ts") and not ex.by_user("/elsewhere/x.py")   # outside the root: by name
    assert Excluder(None, ("*.gen.ts",)).by_user("/x/y.gen.ts")
    # the setting's patterns keep files out of the project's reads from disk too
    assert project_for(str(tmp_path), ("*.gen.ts",)).excluder.excluded(str(tmp_path / "a.gen.ts"))
    assert not project_for(str(tmp_path)).excluder.excluded(str(tmp_path / "a.gen.ts"))


def test_gitignore_files_below_the_root_and_negations(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / ".gitignore").write_text("*.gen.ts\n!keep.gen.ts\n")
    (tmp_path / "a" / ".gitignore").write_text("local/\nprivate.ts\n")
    ex = Excluder(str(tmp_path), extra=["*.draft.ts"])
    assert ex.excluded(str(tmp_path / "x.gen.ts")) and not ex.excluded(str(tmp_path / "keep.gen.ts"))
    assert ex.excluded(str(tmp_path / "a" / "local" / "x.ts")) and ex.excluded(str(tmp_path / "a" / "b" / "private.ts"))
    assert not ex.excluded(str(tmp_path / "private.ts"))       # a/.gitignore speaks for a/ only
    assert ex.excluded(str(tmp_path / "notes.draft.ts"))       # the user's own globs
    assert ex.excluded(str(tmp_path / ".git" / "config"))


# ---- the ring -----------------------------------------------------------------------------------------------------

def text_of_lines(tag: str, n: int = 200) -> str:
    return "\n".join(f"value_{tag}_{i} = compute_{tag}({i})" for i in range(n)) + "\n"


def test_ring_is_bounded_and_evicts_the_oldest():
    ring = Ring(max_chunks=4, chunk_lines=32)
    for i in range(6):
        ring.add(f"/w/f{i}.py", text_of_lines(str(i)), 100, "view")
    chunks = ring.chunks()
    assert len(chunks) == 4 and [c.path for c in chunks] == ["/w/f5.py", "/w/f4.py", "/w/f3.py", "/w/f2.py"]
    assert all(len(c.lines) <= 32 for c in chunks) and chunks[0].start == 84


def test_ring_replaces_chunks_it_overlaps_by_more_than_90_percent():
    ring = Ring(max_chunks=16, chunk_lines=32)
    text = text_of_lines("a")
    ring.add("/w/a.py", text, 100, "edit")
    # typing on one line of the chunk: the same place, the newest text kept, once
    edited = text.replace("value_a_100 = compute_a(100)", "value_a_100 = compute_a(100) + 1")
    ring.add("/w/a.py", edited, 100, "edit")
    assert len(ring) == 1 and "compute_a(100) + 1" in ring.chunks()[0].text
    ring.add("/w/a.py", text, 101, "view")        # one line further: 31 of 32 lines shared
    assert len(ring) == 1
    ring.add("/w/a.py", text, 120, "view")        # 20 lines further: a chunk of its own
    assert len(ring) == 2
    ring.add("/w/b.py", "\n\n   \n}\n", 1)       # nothing worth showing
    assert len(ring) == 2
    long = ring.add_range("/w/c.py", text_of_lines("c"), 0, 150)   # a long visible range: its middle
    assert long is not None and len(long.lines) == 32 and long.start == 59
    assert similarity("a\nb\nc", "a\nb\nc") == 1.0 and similarity("a\nb", "c\nd") == 0.0


# ---- into the prompt --------------------------------------------------------------------------------------------

class CharTokenizer:
    fim = FimTokens(prefix=-1, suffix=-2, middle=-3, repo_name=-4, file_sep=-5)

    def tokenize(self, text):
        return [ord(c) for c in text]


def head_text(tokens: list[int]) -> str:
    """The prompt's text up to the FIM prefix, with the special tokens written out."""
    names = {-4: "<|repo_name|>", -5: "<|file_sep|>"}
    end = tokens.index(-1)
    return "".join(names.get(t, chr(t) if t >= 0 else "?") for t in tokens[:end])


def test_a_definition_from_an_unopened_file_reaches_the_head_with_relative_paths():
    root = PROJECT / "python"
    doc = Document.read(str(root / "src" / "shop" / "cart.py"))
    line, col = cursor_after(doc, "apply_voucher(")
    ctx = gather(doc, line, col, [], DefinitionIndex(), 512, DocumentFiles(), root=str(root))
    paths = [p for p, _ in ctx.files]
    assert paths[0] == "src/shop/pricing.py"           # the name called at the cursor, imported by name, first
    assert "floor_cents: int = 100" in ctx.files[0][1] and '"""The total after the voucher' in ctx.files[0][1]
    assert "src/shop/tax.py" in paths and "src/shop/util/text.py" in paths   # tax.vat_cents, money below
    assert ctx.path == "src/shop/cart.py" and ctx.repo == "python"
    p = build_prompt(CharTokenizer(), PromptParts(ctx.prefix, ctx.suffix, path=ctx.path, repo=ctx.repo,
                                                  files=ctx.files), PromptBudget(context_tokens=2048))
    head = head_text(p.tokens)
    assert head.startswith("<|repo_name|>python\n<|file_sep|>src/shop/pricing.py\ndef apply_voucher(")
    assert head.endswith("<|file_sep|>src/shop/cart.py\n")
    # without a root: today's head (other open documents only)
    assert gather(doc, line, col, [], DefinitionIndex(), 512, DocumentFiles()).files == []


def test_the_fast_prompt_shows_the_definitions_its_nearest_lines_use_and_nothing_else_of_other_files():
    root = PROJECT / "python"
    doc = Document.read(str(root / "src" / "shop" / "cart.py"))
    line, col = cursor_after(doc, "apply_voucher(")
    chosen = DocumentFiles()
    # room for one definition (apply_voucher with its docstring: ~300 characters)
    ctx = gather(doc, line, col, [], DefinitionIndex(), 512, chosen, root=str(root), near_tokens=110)
    assert [p for p, _ in ctx.near_files] == ["src/shop/pricing.py"]
    assert "def apply_voucher(" in ctx.near_files[0][1]
    assert len(ctx.files) > 1   # the page's head holds more: tax, money, the models
    parts = PromptParts(ctx.prefix, ctx.suffix, path=ctx.path, repo=ctx.repo, files=ctx.files,
                        near_files=ctx.near_files)
    budget = PromptBudget(context_tokens=2048, near_tokens=400)
    fast = build_fast_prompt(CharTokenizer(), parts, budget, 200)
    head = head_text(fast.tokens)
    assert head.startswith("<|repo_name|>python\n<|file_sep|>src/shop/pricing.py\ndef apply_voucher(")
    assert "tax.py" not in head and "text.py" not in head and fast.files == 1
    # the near room holds the fast prompt's files as the context room holds the page's: one that does not fit
    # is left out
    small = build_fast_prompt(CharTokenizer(), parts, replace(budget, near_tokens=50), 200)
    assert head_text(small.tokens) == "<|repo_name|>python\n<|file_sep|>src/shop/cart.py\n" and small.files == 0
    # the same scope keeps the same fast files (their cached state serves the next request); no room, no files
    again = gather(doc, line - 1, 8, [], DefinitionIndex(), 512, chosen, root=str(root), near_tokens=110)
    assert again.near_files == ctx.near_files
    assert gather(doc, line, col, [], DefinitionIndex(), 512, DocumentFiles(), root=str(root)).near_files == []
    # the settings: only with the project's context on
    assert Settings(project_context=True, fast_context_tokens=128).prompt_budget().near_tokens == 128
    assert Settings(fast_context_tokens=128).prompt_budget().near_tokens == 0


def test_an_open_secret_files_text_enters_no_other_files_context():
    """Other open documents are context, but never a secret file (the protocol also leaves out every document it
    refused: excluded by the user, too large, binary)."""
    doc = Document("/w/app.py", "from config import load\n\n\ndef connect():\n    token = API_TOKEN\n    \n", "python")
    others = [Document("/w/.env", "API_TOKEN = 'env-secret-1'\ndef API_TOKEN():\n    return 'env-secret-2'\n",
                       "python"),
              Document("/w/config.py", "API_TOKEN = 'from-config'\n\n\ndef load():\n    return API_TOKEN\n", "python")]
    for root in (None, "/w"):
        ctx = gather(doc, 5, 4, others, DefinitionIndex(), 512, DocumentFiles(), root=root)
        text = "".join(t for _, t in ctx.files)
        assert "def load" in text and "env-secret" not in text, ctx.files
        # the same text under another name is context (so the line above could fail)
        plain = [replace(others[0], path="/w/values.py")] + others[1:]
        ctx = gather(doc, 5, 4, plain, DefinitionIndex(), 512, DocumentFiles(), root=root)
        assert "env-secret" in "".join(t for _, t in ctx.files), ctx.files


def test_module_at_the_cursor_brings_its_definitions(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(PROJECT / "python", root)
    f = root / "src" / "shop" / "use.py"
    f.write_text("from shop import pricing\n\n\ndef total_for(net, code, years):\n    off = pricing.\n")
    doc = Document.read(str(f))
    ctx = gather(doc, 4, len("    off = pricing."), [], DefinitionIndex(), 512, DocumentFiles(), root=str(root))
    assert ctx.files and ctx.files[0][0] == "src/shop/pricing.py"
    assert "def apply_voucher(" in ctx.files[0][1] and "def loyalty_discount(" in ctx.files[0][1]


def test_other_languages_open_documents_and_ring_order():
    root = PROJECT / "ts"
    doc = Document.read(str(root / "src" / "app" / "main.ts"))
    line, col = cursor_after(doc, "formatPrice(")
    helper = Document(str(root / "src" / "app" / "helper.ts"), "export function receiptTitle(): string {\n"
                                                               "  return 'Receipt';\n}\n")
    doc2 = Document(doc.path, doc.text.replace("const total", "const title = receiptTitle();\n  const total"))
    ring = Ring()
    ring.add(str(root / "src" / "app" / "notes.ts"), "\n".join(f"const note{i} = {i};" for i in range(40)), 20)
    ring.add(str(root / "src" / "app" / "style.css"), "\n".join(f".c{i} {{ color: red; }}" for i in range(40)), 20)
    ring.add(doc.path, doc.text, 3)                  # the document's own code: in its prompt already
    ctx = gather(doc2, line + 1, col, [helper], DefinitionIndex(), 1024, DocumentFiles(), root=str(root),
                 recent=ring.chunks())
    paths = [p for p, _ in ctx.files]
    # imported definitions used near the cursor, then the open documents' snippets, then the ring's chunks
    assert paths.index("src/lib/format.ts") < paths.index("src/app/helper.ts") < paths.index("src/app/notes.ts")
    assert "src/app/style.css" not in paths and "src/app/main.ts" not in paths


def test_the_head_stays_for_every_cursor_in_a_function_and_moves_only_for_what_it_lacks(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(PROJECT / "python", root)
    f = root / "src" / "shop" / "flow.py"
    f.write_text(
        "import shop.tax as tax\nfrom shop.util.text import money\nfrom .pricing import apply_voucher, "
        "loyalty_discount\n\n\n"
        "def price(net, code, country):\n    net = apply_voucher(net, code)\n    gross = net + tax.vat_cents(net, "
        "country)\n    label = money(gross)\n    return label\n\n\n"
        "def again(net, code):\n    return apply_voucher(net, code)\n\n\n"
        "def loyal(net, years):\n    return loyalty_discount(net, years)\n")
    doc = Document.read(str(f))
    chosen, index = DocumentFiles(), DefinitionIndex()
    budget = PromptBudget(context_tokens=600)

    def head(line: int, col: int, text: str | None = None, tokens: int = 160) -> list[int]:
        d = Document(doc.path, text) if text is not None else doc
        ctx = gather(d, line, col, [], index, tokens, chosen, root=str(root))
        p = build_prompt(CharTokenizer(), PromptParts(ctx.prefix, ctx.suffix, path=ctx.path, repo=ctx.repo,
                                                      files=ctx.files), budget)
        return p.tokens[:p.tokens.index(-1)]

    first = head(6, 10)
    assert "def apply_voucher(" in head_text(first + [-1])
    # other cursors of price(), typing in it (a name of another import, even), the same head
    assert head(8, 4) == first and head(9, 16) == first
    typed = doc.text.replace("    return label\n", "    return label + loyalty_discount(net, 1)\n")
    assert head(9, 12, typed) == first
    # another function that uses what the head shows: the same head
    assert head(13, 10) == first
    # one that uses what it lacks (a small budget: loyalty_discount did not fit beside the others): a new head
    assert "def loyalty_discount(" not in head_text(first + [-1])
    moved = head(17, 10)
    assert "def loyalty_discount(" in head_text(moved + [-1])
    assert head(17, 4) == moved


def real_text(engine, tokens: list[int]) -> str:
    """The prompt's text with the FIM and repository tokens written out (detokenize leaves them out)."""
    fim = engine.fim
    special = {fim.repo_name: "<|repo_name|>", fim.file_sep: "<|file_sep|>", fim.prefix: "<|fim_prefix|>",
               fim.suffix: "<|fim_suffix|>", fim.middle: "<|fim_middle|>"}
    out, run = [], []
    for t in tokens + [None]:
        if t is None or t in special:
            out.append(engine.target.detokenize(run))
            run = []
            if t is not None:
                out.append(special[t])
        else:
            run.append(t)
    return "".join(out)


@pytest.mark.models
def test_the_real_prompt_holds_the_imported_definition(pipeline):
    from lsp_server.pipeline import CompletionRequest
    root = PROJECT / "python"
    doc = Document.read(str(root / "src" / "shop" / "cart.py"))
    line, col = cursor_after(doc, "apply_voucher(")
    plan = pipeline.plan(CompletionRequest(doc, line, col, root=str(root)))
    text = real_text(pipeline.engine, plan.prompt.tokens)
    assert text.startswith("<|repo_name|>python\n<|file_sep|>src/shop/pricing.py\n"
                           "def apply_voucher(total_cents: int, voucher_code: str")
    assert text.index("def apply_voucher(") < text.index("<|file_sep|>src/shop/cart.py\n") < text.index(
        "<|fim_prefix|>")
    # another cursor in the same function: the same tokens up to the cursor's page
    other = pipeline.plan(CompletionRequest(doc, line - 1, 8, root=str(root)))
    n = plan.prompt.tokens.index(pipeline.engine.fim.prefix)
    assert other.prompt.tokens[:n + 1] == plan.prompt.tokens[:n + 1]
    plain = pipeline.plan(CompletionRequest(doc, line, col))
    assert "def apply_voucher(" not in real_text(pipeline.engine, plain.prompt.tokens)
