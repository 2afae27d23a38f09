"""The versions checker (MXL5xx): picks the dependency files of a run and hands them to the
evaluation (`_dependency_sets.py`), which groups what the readers (`mxlint.requirements_parsing`,
`mxlint.dockerfile`) find into dependency sets and judges them. The evaluation is imported only
when a run has a dependency file, so linting Python alone never loads `packaging`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mxlint.checker import CommentStyle, TextChecker
from mxlint.rule import Finding, Rule

if TYPE_CHECKING:
    from mxlint.config import Settings
from mxlint.rules.versions._files import file_kind, named_kind
from mxlint.rules.versions.conflicting_mxnet_variants import ConflictingMxnetVariants
from mxlint.rules.versions.cuda_base_image import CudaBaseImage
from mxlint.rules.versions.cuda_variant_mismatch import CudaVariantMismatch
from mxlint.rules.versions.cudnn_mismatch import CudnnMismatch
from mxlint.rules.versions.invalid_requirement import InvalidRequirement
from mxlint.rules.versions.numpy_breaks_mxnet_import import NumpyBreaksMxnetImport
from mxlint.rules.versions.onnx_breaks_mxnet_export import OnnxBreaksMxnetExport
from mxlint.rules.versions.undeclared_mxnet import UndeclaredMxnet
from mxlint.rules.versions.unpinned_mxnet import UnpinnedMxnet
from mxlint.rules.versions.unreleased_mxnet_version import UnreleasedMxnetVersion

VERSION_RULES: tuple[type[Rule], ...] = (
    UnpinnedMxnet,
    ConflictingMxnetVariants,
    CudaVariantMismatch,
    CudaBaseImage,
    CudnnMismatch,
    UnreleasedMxnetVersion,
    OnnxBreaksMxnetExport,
    NumpyBreaksMxnetImport,
    InvalidRequirement,
    UndeclaredMxnet,
)


class DependencyFilesChecker(TextChecker):
    """Reads every dependency file of the run together (Dockerfiles see their `-r` files)."""

    rules = VERSION_RULES
    name = "versions"

    @classmethod
    def matches(cls, filename: str) -> bool:
        return file_kind(filename) is not None

    @classmethod
    def reads_named(cls, filename: str) -> bool:
        return named_kind(filename) is not None

    @classmethod
    def comment_style(cls, filename: str) -> CommentStyle:
        kind = named_kind(filename)
        if kind == "requirements":
            return "requirements"
        if kind == "dockerfile":
            return "dockerfile"
        return "line"

    def check_files(self, files: list[tuple[str, str]], settings: Settings) -> list[Finding]:
        from mxlint.rules.versions._dependency_sets import (
            check_files,  # only runs that have such files
        )

        return check_files(files, settings)
