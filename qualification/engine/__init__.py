"""Ground truth from a real serving engine: record vLLM (CPU) serving a trace, replay it with
aisim, and score the difference (``aisim record engine``, ``aisim qualify engine``).

Recording needs vLLM (``tox -e engine``); loading, replaying and scoring a committed recording
does not.
"""

from qualification.engine._cli import add_arguments as add_engine_arguments
from qualification.engine._cli import check_arguments as check_record_arguments
from qualification.engine._cli import run as record_engine
from qualification.engine._measured import measured_latencies, throughput_tok_s
from qualification.engine._plain import (
    export_plain,
    import_plain,
    pool_grid_passes,
    write_plain_grid,
)
from qualification.engine._recording import (
    EngineRecording,
    ServedRun,
    StepTable,
    load_recording,
    load_served_run,
    load_step_table,
)
from qualification.engine._render import to_markdown
from qualification.engine._replay import (
    check_same_engine,
    grid_counts,
    observed_acceptance,
    recorded_settings,
    replay_config,
    replay_run,
)
from qualification.engine._report_section import engine_html, engine_sections
from qualification.engine._schema import (
    ENGINE_SETTINGS,
    GRID_STEPS,
    SERVED_REQUESTS,
    SERVED_STEPS,
    engine_recording_schema,
)
from qualification.engine._score import (
    compare,
    error_figures,
    noise_floor,
    repeat_floor,
    score_recording,
    write_outputs,
)
from qualification.engine._step_model import EngineStepModel

__all__ = [
    "ENGINE_SETTINGS",
    "GRID_STEPS",
    "SERVED_REQUESTS",
    "SERVED_STEPS",
    "engine_recording_schema",
    "EngineRecording",
    "EngineStepModel",
    "ServedRun",
    "StepTable",
    "compare",
    "error_figures",
    "load_recording",
    "load_served_run",
    "load_step_table",
    "noise_floor",
    "repeat_floor",
    "observed_acceptance",
    "replay_config",
    "replay_run",
    "score_recording",
    "engine_html",
    "engine_sections",
    "add_engine_arguments",
    "check_record_arguments",
    "record_engine",
    "export_plain",
    "import_plain",
    "pool_grid_passes",
    "write_plain_grid",
    "to_markdown",
    "write_outputs",
    "measured_latencies",
    "throughput_tok_s",
    "check_same_engine",
    "grid_counts",
    "recorded_settings",
]
