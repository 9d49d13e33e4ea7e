"""Sphinx configuration for the skltr documentation.

Build with ``python -m sphinx -b html -W --keep-going docs docs/_build/html`` from the
repository root (or ``make -C docs html``); ``-b doctest`` runs every ``>>>`` example of the
pages and of the docstrings they include.
"""

import importlib.util
import os
import sys
from pathlib import Path

# Document the checkout this file lives in, not an installed copy.
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import skltr  # noqa: E402

project = "skltr"
author = "skltr developers"
copyright = "skltr developers"  # noqa: A001 - Sphinx's name
release = skltr.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# -- examples gallery -------------------------------------------------------------------------
# Every script of examples/ becomes a page under auto_examples/ with its output; the plot_*
# scripts are run during the build (a few seconds each) and their figures captured.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
}
os.environ.setdefault("MPLBACKEND", "Agg")

# Cross-links to NumPy and scikit-learn need their inventories from the network, which a
# build machine may not have (and a failed fetch is a warning, fatal under -W). Opt in with
# SKLTR_DOCS_INTERSPHINX=1.
if os.environ.get("SKLTR_DOCS_INTERSPHINX") == "1":
    extensions.append("sphinx.ext.intersphinx")
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable/", None),
        "scipy": ("https://docs.scipy.org/doc/scipy/", None),
        "sklearn": ("https://scikit-learn.org/stable/", None),
    }

templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py"]
source_suffix = {".rst": "restructuredtext"}
root_doc = "index"
highlight_language = "text"  # `::` blocks are ASCII pictures; code uses code-block / >>>
default_role = "literal"  # `x` renders as code, never as a broken cross-reference

# -- autodoc / autosummary / numpydoc -------------------------------------------------------
autosummary_generate = True  # stub pages under docs/generated/ (git-ignored)
autosummary_imported_members = True
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc sections already give the types
numpydoc_show_class_members = False  # the class template lists members with autodoc
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- doctest --------------------------------------------------------------------------------
# Docstring examples may use the public names of their module without importing them.
doctest_global_setup = """
import numpy as np
from skltr import QuickScorerPredictor, TreeEnsemble
from skltr.datasets import dump_letor, load_letor, make_ranking
from skltr.metrics import (average_precision_score, dcg_score, err_score, map_score,
                           mrr_score, ndcg_score, precision_at_k)
from skltr.model_selection import QueryKFold, make_ranking_scorer, train_test_split_by_query
from skltr.trees import NodeFlags
from skltr.utils import group_by_qid, group_sizes_to_qid
"""

# -- HTML -----------------------------------------------------------------------------------
if importlib.util.find_spec("pydata_sphinx_theme") is not None:
    html_theme = "pydata_sphinx_theme"
    html_theme_options = {
        "navigation_with_keys": False,
        "show_toc_level": 2,
    }
else:
    html_theme = "alabaster"
html_title = f"skltr {release}"
html_show_sourcelink = False


# -- hooks ----------------------------------------------------------------------------------
def _skip_generated_request_methods(app, what, name, obj, skip, options):
    """Leave out scikit-learn's metadata-routing methods (``set_{method}_request``,
    ``get_metadata_routing``) inherited or generated from scikit-learn.

    Their docstrings come from scikit-learn and cross-reference its own glossary; the
    routing they control is explained in the user guide instead.
    """
    if (name.startswith("set_") and name.endswith("_request")) or (
            name == "get_metadata_routing"
            and getattr(obj, "__module__", "").startswith("sklearn.")):
        return True
    return None


def _peer_names_table():
    """``.. skltr-peer-names::``: the LightGBM / XGBoost name table of
    ``skltr.ranking._peer_names`` (the one the rankers' errors read) as a list-table."""
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    from skltr.ranking._peer_names import PEER_NAMES

    def cell(entries):
        return " / ".join(f"``{e}``" for e in entries) or "--"

    class PeerNames(SphinxDirective):
        has_content = False

        def run(self):
            lines = [".. list-table::", "   :header-rows: 1", "   :widths: 24 26 24 26", "",
                     "   * - skltr (``GPUHistGBDTRanker``)", "     - LightGBM",
                     "     - XGBoost", "     - notes"]
            for row in PEER_NAMES:
                note = row.note.replace("*", "\\*")  # 2**label: not strong emphasis
                lines += [f"   * - ``{row.skltr}``", f"     - {cell(row.lightgbm)}",
                          f"     - {cell(row.xgboost)}", f"     - {note}"]
            node = nodes.section()
            node.document = self.state.document
            self.state.nested_parse(StringList(lines, source="skltr.ranking._peer_names"),
                                    self.content_offset, node)
            return node.children

    return PeerNames


def setup(app):
    app.connect("autodoc-skip-member", _skip_generated_request_methods)
    app.add_directive("skltr-peer-names", _peer_names_table())
