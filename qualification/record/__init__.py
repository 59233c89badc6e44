"""The recorder: time STP forward passes and whole SD rounds of models built from config.

Needs PyTorch (``pip install 'aisim[record]'``); importing this package does not.
"""

from qualification.record._cli import add_arguments as add_recorder_arguments
from qualification.record._cli import run as run_recorder
from qualification.record._geometry import (
    DRAFTER_KINDS,
    PRESETS,
    DecoderGeometry,
    DrafterGeometry,
    Grid,
    Preset,
    get_preset,
)
from qualification.record._recorder import record_dataset, require_torch

__all__ = [
    "DRAFTER_KINDS",
    "PRESETS",
    "DecoderGeometry",
    "DrafterGeometry",
    "Grid",
    "Preset",
    "get_preset",
    "record_dataset",
    "require_torch",
    "add_recorder_arguments",
    "run_recorder",
]
