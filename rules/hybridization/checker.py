"""The hybridization checker (MXL1xx): one analysis per file (`_run.py`, over `_analysis.py` and
the taint interpreter of `_taint.py`) reports every rule of the family; this class names the
rules and how the analysis spells code.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from mxlint.argparse_options import read_number_options
from mxlint.checker import Checker
from mxlint.names import assignment_targets
from mxlint.rules.hybridization._arrays import nd_assigned_names
from mxlint.rules.hybridization._run import HybridAnalysis
from mxlint.rules.hybridization.autograd_state_in_hybrid import AutogradStateInHybrid
from mxlint.rules.hybridization.block_state_in_forward import BlockStateInForward
from mxlint.rules.hybridization.imperative_op_in_hybrid import ImperativeOpInHybrid
from mxlint.rules.hybridization.implicit_broadcast import ImplicitBroadcast
from mxlint.rules.hybridization.inplace_op_in_hybrid import InplaceOpInHybrid
from mxlint.rules.hybridization.literal_for_array_argument import (
    LiteralForArrayArgument,
    check_call,
    has_positional_literal,
    operator_key,
)
from mxlint.rules.hybridization.non_tensor_output import NonTensorOutput
from mxlint.rules.hybridization.one_namespace_function import OneNamespaceFunction
from mxlint.rules.hybridization.print_tensor_in_hybrid import PrintTensorInHybrid
from mxlint.rules.hybridization.reshape_varargs import ReshapeVarargs
from mxlint.rules.hybridization.scalar_input_to_hybridized_block import (
    Passed,
    ScalarInputToHybridizedBlock,
    Sites,
    check_scope,
)
from mxlint.rules.hybridization.tensor_as_sequence import TensorAsSequence
from mxlint.rules.hybridization.tensor_attribute import TensorAttribute
from mxlint.rules.hybridization.tensor_control_flow import TensorControlFlow
from mxlint.rules.hybridization.tensor_to_python import TensorToPython
from mxlint.rules.hybridization.tensor_truth_value import TensorTruthValue, check_truth
from mxlint.rules.hybridization.unknown_mxnet_member import UnknownMxnetMember, check_member
from mxlint.rules.hybridization.unknown_operator_keyword import (
    UnknownOperatorKeyword,
    check_keywords,
)
from mxlint.walker import iter_nodes, typed_nodes

#: The statements `_member_targets` reads.
_ASSIGNMENTS = frozenset({cst.Assign, cst.AugAssign, cst.AnnAssign})


class HybridizationChecker(HybridAnalysis):
    """Reports the hybridization family; the analysis is `HybridAnalysis`. MXL110 also reads
    the members of imperative code's NDArrays, node by node."""

    #: Names the file assigns from a call spelt with `nd.` (`x = mx.nd.ones(...)`): the only
    #: names `check_member` can prove to be NDArrays; found once per file, textually.
    _nd_names: frozenset[str] | None = None

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._nd_names is None:
            self._nd_names = nd_assigned_names(self.ctx)
        if type(node.value) is cst.Call or (
            type(node.value) is cst.Name and node.value.value in self._nd_names
        ):
            check_member(self.ctx, node)

    rules = (
        TensorControlFlow,
        TensorToPython,
        TensorAttribute,
        TensorAsSequence,
        ImperativeOpInHybrid,
        PrintTensorInHybrid,
        InplaceOpInHybrid,
        AutogradStateInHybrid,
        UnknownMxnetMember,
        OneNamespaceFunction,
        ReshapeVarargs,
        BlockStateInForward,
        NonTensorOutput,
        ImplicitBroadcast,
    )


class ScalarInputChecker(Checker):
    """MXL109 over the module's top level and each function: the call sites of blocks."""

    rules = (ScalarInputToHybridizedBlock,)
    name = "hybridized-calls"

    def visit_Module(self, node: cst.Module) -> None:
        if self.ctx.mxnet_line != "1" or ".hybridize(" not in self.ctx.source:
            return
        # Each scope on its own; then the module's functions again with what each call of them
        # that passes a hybridized block passes (`run(net, x, 0.5)`, `def run(net, x, s)`).
        functions = {
            stmt.name.value: stmt
            for stmt in node.body
            if type(stmt) is cst.FunctionDef and type(stmt.body) is cst.IndentedBlock
        }
        sites: Sites = []
        seen: set[int] = set()
        options = read_number_options(self.ctx, node)
        check_scope(
            self.ctx, node.body, functions=functions, sites=sites, seen=seen, options=options
        )
        for fn in iter_nodes(node):
            if type(fn) is cst.FunctionDef and type(fn.body) is cst.IndentedBlock:
                check_scope(
                    self.ctx,
                    fn.body.body,
                    functions=functions,
                    sites=sites,
                    caller=f"`{fn.name.value}()`",
                    seen=seen,
                    options=options,
                )
        for name, passed, caller in sites:
            body = functions[name].body
            assert type(body) is cst.IndentedBlock
            check_scope(self.ctx, body.body, passed=passed, via=caller, seen=seen)
        # An object's block hybridized by its `__init__`, called by its other methods (a class
        # deriving from nothing: a Block's children are traced with their parent instead).
        for cls in iter_nodes(node):
            if type(cls) is not cst.ClassDef or type(cls.body) is not cst.IndentedBlock:
                continue
            if any(
                not (type(b.value) is cst.Name and b.value.value == "object") for b in cls.bases
            ):
                continue
            methods = [
                s
                for s in cls.body.body
                if type(s) is cst.FunctionDef and type(s.body) is cst.IndentedBlock
            ]
            members: Passed = {}
            for method in methods:
                if method.name.value == "__init__":
                    assert type(method.body) is cst.IndentedBlock
                    check_scope(self.ctx, method.body.body, members=members, seen=seen)
            # A number `__init__` keeps is one only while no other method rebinds it.
            rebound = {
                f"self.{target.attr.value}"
                for method in methods
                if method.name.value != "__init__"
                for target in _member_targets(method)
            }
            members = {
                name: held
                for name, held in members.items()
                if held[0] == "block" or name not in rebound
            }
            if not any(kind == "block" for kind, _ in members.values()):
                continue
            for method in methods:
                if method.name.value != "__init__":
                    assert type(method.body) is cst.IndentedBlock
                    check_scope(
                        self.ctx,
                        method.body.body,
                        passed=members,
                        via="`__init__()`",
                        seen=seen,
                    )


def _member_targets(fn: cst.FunctionDef) -> Iterator[cst.Attribute]:
    """The `self.x` a function assigns (`self.x = ...`, `self.x += ...`)."""
    for node in typed_nodes(fn.body, _ASSIGNMENTS):
        for target in assignment_targets(node):
            if (
                type(target) is cst.Attribute
                and type(target.value) is cst.Name
                and target.value.value == "self"
            ):
                yield target


class OperatorCallChecker(Checker):
    """MXL116 on every call of an MXNet operator (`mx.nd.<op>`, `mx.sym.<op>`, and `F.<op>`
    where `F` is the `F` parameter of an enclosing `hybrid_forward` or helper) and MXL118 on
    their keywords, and MXL117 on every truth test of imperative code."""

    rules = (LiteralForArrayArgument, TensorTruthValue, UnknownOperatorKeyword)
    name = "operator-calls"

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.mxnet_line == "2":
            return
        if type(node.func) is cst.Name:
            self._truth(node)  # bool(x)
            return
        literal = has_positional_literal(node)
        keywords = any(a.keyword is not None for a in node.args)
        if not (literal or keywords) or type(node.func) is not cst.Attribute:
            return  # most calls: nothing either rule could report, nothing to resolve
        key = operator_key(self.ctx, node, self._f_names())
        if key is None:
            return
        if literal:
            check_call(self.ctx, node, key)
        if keywords:
            check_keywords(self.ctx, node, key)

    _nd_names: frozenset[str] | None = None

    def _truth(self, node: cst.CSTNode) -> None:
        if self._nd_names is None:
            self._nd_names = nd_assigned_names(self.ctx)
        check_truth(self.ctx, node, self._nd_names)

    visit_If = visit_While = visit_IfExp = visit_Assert = visit_UnaryOperation = _truth

    def _f_names(self) -> frozenset[str]:
        names = set()
        for scope in self.ctx.stack:
            if type(scope) is not cst.FunctionDef:
                continue
            params = scope.params.params
            if scope.name.value == "hybrid_forward" and len(params) >= 2:
                names.add(params[1].name.value)
            names.update(p.name.value for p in params if p.name.value == "F")
        return frozenset(names)
