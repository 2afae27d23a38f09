"""The lifecycle checker (MXL7xx): follows a script in execution order (`mxlint/flow.py`), keeps
the state of each network it builds (`_analysis.py`), pairs the model files it reads with their
writers (`_file_pairs.py`, across the files of a run too), and runs the decisions of the rules'
files on what it meets.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from mxlint import knowledge
from mxlint.checker import Checker
from mxlint.flow import Flow, Site
from mxlint.rules.lifecycle import amp_init_after_net, export_before_forward
from mxlint.rules.lifecycle._analysis import _functions, _NetState
from mxlint.rules.lifecycle._file_pairs import check_file, pair_across_files
from mxlint.rules.lifecycle.amp_init_after_net import AmpInitAfterNet
from mxlint.rules.lifecycle.amp_loss_not_scaled import AmpLossNotScaled, check_scaling
from mxlint.rules.lifecycle.amp_trainer_not_initialized import (
    AmpTrainerNotInitialized,
    check_trainers,
)
from mxlint.rules.lifecycle.export_before_forward import (
    NEVER_HYBRIDIZED,
    NOT_RUN,
    ExportBeforeForward,
)
from mxlint.rules.lifecycle.hybridize_without_static_alloc import (
    HybridizeWithoutStaticAlloc,
    check_static_alloc,
)
from mxlint.rules.lifecycle.imports_input_names import ImportsInputNames
from mxlint.rules.lifecycle.parameter_format_mismatch import ParameterFormatMismatch
from mxlint.rules.lifecycle.save_params_outside_name_scope import (
    SaveParamsOutsideNameScope,
    check_save_params,
)
from mxlint.text_search import search_at_word_start

if TYPE_CHECKING:
    from mxlint.project import ProjectIndex
    from mxlint.rule import Finding

#: The AMP module named in a file.
#: `amp` as a word (`search_at_word_start` adds the boundary before it).
_AMP = re.compile(r"amp\b")
#: Words a file that writes or reads model files has.
_FILE_WORDS = ("save", "load", "export", "imports", "checkpoint")


class LifecycleChecker(Checker):
    """Export order per function or script; AMP initialisation order along the flow; model
    files paired with their writers."""

    rules = (
        ExportBeforeForward,
        AmpInitAfterNet,
        HybridizeWithoutStaticAlloc,
        ImportsInputNames,
        ParameterFormatMismatch,
        AmpTrainerNotInitialized,
        AmpLossNotScaled,
        SaveParamsOutsideNameScope,
    )
    name = "lifecycle"
    cross_file = True

    def end(self) -> None:
        source = self.ctx.source
        module = self.ctx.module
        if ".export(" in source:
            self._exports(module)
            for node, cls in _functions(module):
                self._exports(node, cls)
        if "amp" in source and ".init(" in source:
            flow = Flow(module)
            self._amp(list(flow.module_sites()))
            for fn in flow.functions.values():
                self._amp(list(Flow(module).function_sites(fn)))
        if search_at_word_start(_AMP, source) and ("scale_loss" in source or "backward" in source):
            roots = _roots(module)
            if "scale_loss" in source:
                for sites, depth in roots:
                    check_trainers(self.ctx, sites, depth)
            if ".init(" in source:
                check_scaling(self.ctx, [sites for sites, _ in roots])
        if ".save_params(" in source and self.ctx.mxnet_line != "2":
            check_save_params(self.ctx, module)
            for fn, _ in _functions(module):
                check_save_params(self.ctx, fn)
        if ".hybridize(" in source and "record(" in source:
            check_static_alloc(self.ctx, module)
            for fn, _ in _functions(module):
                check_static_alloc(self.ctx, fn)
        if self.ctx.mxnet_line != "2" and any(word in source for word in _FILE_WORDS):
            facts = check_file(self.ctx)
            if facts:
                self.ctx.facts.checker_facts[self.name] = facts

    @classmethod
    def finalize(cls, project: ProjectIndex) -> list[Finding]:
        found = [facts for _, facts in project.checker_facts(cls.name) if isinstance(facts, dict)]
        return pair_across_files(found)

    _exports = export_before_forward.check_exports

    def _name_event(
        self,
        node: cst.Name,
        parent: cst.CSTNode | None,
        grand: cst.CSTNode | None,
        states: dict[str, _NetState],
        nested_refs: set[str],
        cls: str | None = None,
    ) -> None:
        name = node.value
        if type(parent) is cst.AssignTarget and parent.target is node and type(grand) is cst.Assign:
            states[name] = self._bound(grand.value, name in nested_refs, cls)
            return
        state = states.get(name)
        if state is None:
            return
        if type(parent) is cst.Call and parent.func is node:
            state.forwarded = True
            return
        if (
            type(parent) is cst.Attribute
            and parent.value is node
            and type(grand) is cst.Call
            and grand.func is parent
        ):
            method = parent.attr.value
            if method == "hybridize":
                active = next(
                    (
                        a.value
                        for a in grand.args
                        if a.keyword is not None and a.keyword.value == "active"
                    ),
                    None,
                )
                if not (type(active) is cst.Name and active.value == "False"):
                    state.hybridized, state.forwarded = True, False
                state.known_block = state.known_block or state.project_class is None
            elif method in knowledge.FORWARD_METHODS:
                state.forwarded = True
            elif method == "export":
                if not state.unknown and (state.known_block or state.project_class):
                    if state.hybridized is False:
                        state.exports.append((grand, NEVER_HYBRIDIZED))
                    elif state.hybridized and state.forwarded is False:
                        state.exports.append((grand, NOT_RUN))
                state.unknown = True  # one report per network and scope
            elif method in knowledge.BLOCK_METHODS:
                state.known_block = state.known_block or state.project_class is None
            elif method not in knowledge.INERT_BLOCK_METHODS:
                state.unknown = True
            return
        if type(parent) is cst.Attribute and parent.value is node:
            return  # reading an attribute (`net.name`) neither runs nor leaks the network
        state.unknown = True

    def _bound(self, value: cst.BaseExpression, used_elsewhere: bool, cls: str | None) -> _NetState:
        """The state of a network bound to the result of `value` (inside class `cls`)."""
        state = _NetState(unknown=used_elsewhere)
        if type(value) is not cst.Call:
            state.unknown = True
            return state
        name = self.ctx.resolve(value.func)
        if name is not None:
            state.known_block = knowledge.builds_network(name)
            if knowledge.canonical(name) in knowledge.SYMBOL_BLOCKS or name.endswith(
                ("SymbolBlock", "SymbolBlock.imports")
            ):
                state.unknown = True
            elif (
                name.split(".", 1)[0] not in ("mxnet", "gluoncv", "gluonnlp")
                and name.rsplit(".", 1)[-1][:1].isupper()
            ):
                state.project_class = name
        elif type(value.func) is cst.Name and value.func.value[:1].isupper():
            state.project_class = self.ctx.qualname(value.func.value)
        # Whether its maker hybridized it: the function summaries, followed through the
        # functions it came from and the helpers it was handed to (this file's; another
        # file's are the run's to answer).
        origin = self.ctx.effects.origin(value, cls)
        made = self.ctx.effects.origin_hybridized(origin)
        if made:
            state.hybridized, state.forwarded = True, None
        elif made is None:
            if origin[0] == "project" and state.project_class is None:
                state.builder = origin[1]
            elif origin[0] != "project":
                state.hybridized = None
        return state

    _amp = amp_init_after_net.check_amp

    def _line(self, node: cst.CSTNode) -> int:
        from mxlint.positions import node_ranges

        rng = node_ranges(self.ctx.module, [node], self.ctx.source).get(node)
        return rng[0][0] if rng else 0


def _roots(module: cst.Module) -> list[tuple[list[Site], int]]:
    """The calls of the module's statements and of each function and method taken as a root,
    in execution order, with how many frames deep a root's own calls are."""
    out: list[tuple[list[Site], int]] = [(list(Flow(module).module_sites()), 0)]
    flow = Flow(module)
    for fn in flow.functions.values():
        out.append((list(Flow(module).function_sites(fn)), 1))
    for cls, methods in flow.classes.items():
        for method in methods.values():
            out.append((list(Flow(module).function_sites(method, cls)), 1))
    return out
