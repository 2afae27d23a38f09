"""The fast text searches answer as the regular expressions they replace."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from mxlint.context import _DECLINES, _NP_STYLE
from mxlint.rules.contexts._analysis import GPU_WORDS
from mxlint.rules.lifecycle.checker import _AMP
from mxlint.rules.reproducibility._analysis import trains_in_text
from mxlint.text_search import contains_ascii_word, search_at_word_start

#: Pieces of text near the patterns' edges: words they want, word characters in several scripts
#: (`é`, the Arabic digit three, `İ` and the Kelvin sign, which `str.lower` maps to ASCII).
PIECES = [
    "amp", "example", "_amp", "amp_", "mx.np.", "mx.npx.", "onnx.np.", "npx.set_np", "from",
    "mxnet", "import", " np", "npx", "\n", " ", ".", "(", "_", "é", "\u0663", "İ", "\u212a",
    "GPU", "gPu", "cuda", "CUDA", "Context(", "try_all", "TRY_ALL", "cpu(", "x", "1",
    ".backward(", "Trainer(", "xTrainer(", ".fit(", " train", ".fit( train",
    "hybridize", "=", "False", "Falsey", "xhybridize", " = ",
]  # fmt: skip
texts = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)

OLD_NP_STYLE = re.compile(r"\b(?:npx\.set_np|from\s+mxnet\s+import\s+[^\n]*\bnpx?\b|mx\.npx?\.)")
OLD_AMP = re.compile(r"\bamp\b")
OLD_DECLINES = re.compile(r"\bhybridize\s*=\s*False\b")
OLD_GPU = re.compile(
    r"[gG][pP][uU]|[cC][uU][dD][aA]|[cC][oO][nN][tT][eE][xX][tT]\(|[tT][rR][yY]_[aA][lL][lL]"
)
OLD_TRAINS = re.compile(r"\.backward\(|\bTrainer\(|\.fit\(\s*train")


@settings(max_examples=2000, deadline=None)
@given(texts)
def test_each_search_answers_as_its_regular_expression(text):
    assert search_at_word_start(_NP_STYLE, text) == bool(OLD_NP_STYLE.search(text))
    assert search_at_word_start(_AMP, text) == bool(OLD_AMP.search(text))
    assert search_at_word_start(_DECLINES, text) == bool(OLD_DECLINES.search(text))
    assert contains_ascii_word(text, GPU_WORDS) == bool(OLD_GPU.search(text))
    assert trains_in_text(text) == bool(OLD_TRAINS.search(text))


def test_a_match_after_a_word_character_is_skipped_for_a_later_one():
    assert not search_at_word_start(_AMP, "example sample_amp")
    assert search_at_word_start(_AMP, "example amp.init()")
    assert not search_at_word_start(_NP_STYLE, "onnx.np.x")
    assert search_at_word_start(_NP_STYLE, "onnx.np.x = mx.np.ones(1)")
    assert search_at_word_start(_NP_STYLE, "xfrom mxnet import mx.np.")  # inside a failed one


def test_case_and_the_characters_lower_maps_to_ascii():
    assert contains_ascii_word("ctx = mx.GPU(0)", GPU_WORDS)
    assert contains_ascii_word("Try_All_Gpus()", GPU_WORDS)
    assert not contains_ascii_word("\u0130 \u212a cpu()", GPU_WORDS)
