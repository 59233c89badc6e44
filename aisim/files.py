"""Reading and writing files the way the ``aisim`` command does, for the harness and for users'
own tools: the one YAML/JSON loader (limits on size, nesting, duplicate keys and YAML aliases),
checked reads of data files and their sidecars, checks of output paths, and atomic writes that
never overwrite a file unless asked.

Every failure is one line (``ConfigError`` for bad input, ``DataIntegrityError`` for a data file
that does not match its sidecar) naming the file or field. The implementation is
``aisim._io``; this module is its public face (``docs/api.md``). Not compiled: the core never
does I/O.
"""

from __future__ import annotations

from aisim._input_limits import MAX_EXPANDED_NODES, MAX_NESTING_DEPTH
from aisim._io import (
    MAX_DOCUMENT_BYTES,
    MAX_TRACE_BYTES,
    atomic_write_bytes,
    atomic_write_text,
    canonical_json,
    check_output_dir,
    check_output_file,
    check_path_text,
    check_writable,
    input_file_problem,
    int_text_problem,
    load_config_file,
    parse_float_text,
    parse_int_text,
    parse_json_text,
    parse_yaml_text,
    read_input_bytes,
    read_parquet_bytes,
    read_sidecar_object,
    read_verified_bytes,
    write_together,
)

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_EXPANDED_NODES",
    "MAX_NESTING_DEPTH",
    "MAX_TRACE_BYTES",
    "atomic_write_bytes",
    "atomic_write_text",
    "canonical_json",
    "check_output_dir",
    "check_output_file",
    "check_path_text",
    "check_writable",
    "input_file_problem",
    "int_text_problem",
    "load_config_file",
    "parse_float_text",
    "parse_int_text",
    "parse_json_text",
    "parse_yaml_text",
    "read_input_bytes",
    "read_parquet_bytes",
    "read_sidecar_object",
    "read_verified_bytes",
    "write_together",
]
