"""The distributed checker (MXL802-MXL806): reads a file's kvstores, Trainers and Horovod use
once (`_analysis.py`) and runs the decisions of the rules' files on it. Files that mention
none of what the rules read are not looked at.
"""

from __future__ import annotations

import re

from mxlint.checker import Checker
from mxlint.rules.distributed import (
    async_without_update_on_kvstore,
    ineffective_kvstore_setting,
    trainer_kvstore_conflict,
    unscaled_worker_hyperparameters,
    unsplit_worker_data,
)
from mxlint.rules.distributed._analysis import build
from mxlint.rules.distributed.async_without_update_on_kvstore import AsyncWithoutUpdateOnKvstore
from mxlint.rules.distributed.ineffective_kvstore_setting import IneffectiveKvstoreSetting
from mxlint.rules.distributed.trainer_kvstore_conflict import TrainerKvstoreConflict
from mxlint.rules.distributed.unscaled_worker_hyperparameters import (
    UnscaledWorkerHyperparameters,
)
from mxlint.rules.distributed.unsplit_worker_data import UnsplitWorkerData

#: What a file must mention for any of the rules to apply.
_HINT = re.compile(r"Trainer|kv|horovod|byteps|MXNET_KVSTORE")


class DistributedChecker(Checker):
    rules = (
        AsyncWithoutUpdateOnKvstore,
        TrainerKvstoreConflict,
        UnsplitWorkerData,
        UnscaledWorkerHyperparameters,
        IneffectiveKvstoreSetting,
    )
    name = "distributed"

    def end(self) -> None:
        ctx = self.ctx
        if not _HINT.search(ctx.source):
            return
        model = build(ctx)
        if not (model.trainers or model.creates or model.collectives) and (
            "MXNET_KVSTORE" not in ctx.source
        ):
            return
        enabled = ctx.settings.enabled
        if enabled(AsyncWithoutUpdateOnKvstore, ctx.path):
            async_without_update_on_kvstore.check(ctx, model)
        if enabled(TrainerKvstoreConflict, ctx.path):
            trainer_kvstore_conflict.check(ctx, model)
        if enabled(UnsplitWorkerData, ctx.path):
            unsplit_worker_data.check(ctx, model)
        if enabled(UnscaledWorkerHyperparameters, ctx.path):
            unscaled_worker_hyperparameters.check(ctx, model)
        if enabled(IneffectiveKvstoreSetting, ctx.path):
            ineffective_kvstore_setting.check(ctx, model)
