"""Structure-aware mutations of the seeds, and the hypothesis strategy that draws them.

A case is a seed plus a short list of ``Mutation``s. Each mutation names its target (a file of
the seed, or ``argv``), a path into the target's tree (keys and list positions) and an operation
with its payload, so it can be replayed on its own: the campaign drops mutations one at a time to
find the smallest list that still shows a failure (the minimal reproducer). A mutation whose path
no longer exists (an earlier one removed it) does nothing.

Values come from ``INTERESTING`` (edges of our limits, Python's number-parsing quirks, deep
nesting, long names) and from hypothesis's own integers, floats and text.
"""

from __future__ import annotations

import copy
import csv
import io
import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from qualification.fuzz._seeds import BYTES, JSON, JSONL, LINES, SEEDS, YAML, Seed, SeedFile

ARGV = "argv"
#: Operations on a tree node (``raw`` ones act on the file's text after it is written).
OPERATIONS = ("set", "delete", "add_key", "duplicate", "wrap", "empty")
RAW_OPERATIONS = ("raw_append", "raw_truncate", "raw_bytes", "raw_duplicate_line")

_DEEP_LIST: Any = 0
for _ in range(80):
    _DEEP_LIST = [_DEEP_LIST]

#: Values at our limits and past them, and the text forms Python's int()/float() accept.
INTERESTING: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    1,
    -1,
    2,
    3,
    7,
    16,
    63,
    64,
    65,
    255,
    256,
    1023,
    1024,
    4096,
    2**20,
    2**24,
    2**24 + 1,
    2**31,
    2**32,
    2**32 + 1,
    2**40,
    2**53 + 1,
    2**62,
    2**63,
    2**64,
    10**7,
    10**7 + 1,
    10**30,
    10**400,
    0.0,
    -0.0,
    0.5,
    1.5,
    2.0,
    1e-6,
    1e-7,
    1e-300,
    1e-307,
    5e-324,
    1e9,
    1e10,
    4294967296.0,
    4294967297.0,
    1e15,
    1e18,
    1e300,
    1e306,
    1e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    "",
    "x",
    "8",
    "8.0",
    " 3",
    "3 ",
    "+5",
    "-5",
    "1_000",
    "٣",
    "３",
    "0x10",
    "1e3",
    "nan",
    "inf",
    "true",
    "null",
    "~",
    "a" * 256,
    "d/" * 600,
    "\x00",
    "é" * 130,
    "../" * 3 + "etc",
    "h100",
    "fifo.yaml",
    "adir",
    "Qwen/Qwen3-8B",
    "mtp",
    "vllm",
    "sglang",
    "fixed",
    "default",
    "poisson",
    [],
    {},
    [1],
    [1, 2, 3],
    {"type": "fixed"},
    {"a": 1},
    _DEEP_LIST,
)


@dataclass(frozen=True)
class Mutation:
    """One replayable change: ``op`` at ``path`` in ``target`` (a seed file name or argv)."""

    target: str
    path: tuple[Any, ...]
    op: str
    value: Any = None

    def describe(self) -> str:
        where = self.target + "".join(f"[{part!r}]" for part in self.path)
        shown = repr(self.value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return f"{self.op} {where}" + ("" if self.value is None else f" = {shown}")


@dataclass(frozen=True)
class Case:
    """What one run needs: ``argv`` (with ``{out}``) and the input files' bytes; ``nonsense``:
    the case is invalid by construction (an unknown key in a strict file, an unknown flag), so
    exit 0 is a failure."""

    seed: str
    mutations: tuple[Mutation, ...]
    argv: tuple[str, ...]
    files: tuple[tuple[str, bytes], ...]
    nonsense: bool = False

    @property
    def campaign(self) -> str:
        from qualification.fuzz._seeds import SEEDS_BY_NAME

        return SEEDS_BY_NAME[self.seed].campaign


def _paths(tree: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every node's path (the root's is ``()``), breadth first, cut at 12 levels."""
    found = [prefix]
    if len(prefix) >= 12:
        return found
    if isinstance(tree, dict):
        for key in tree:
            found.extend(_paths(tree[key], (*prefix, key)))
    elif isinstance(tree, list):
        for index, item in enumerate(tree):
            found.extend(_paths(item, (*prefix, index)))
    return found


def _parent(tree: Any, path: tuple[Any, ...]) -> tuple[Any, Any] | None:
    """(container, key) holding the node at a non-empty ``path``, or None if it is gone."""
    node = tree
    for part in path[:-1]:
        if (
            isinstance(node, dict)
            and part in node
            or isinstance(node, list)
            and isinstance(part, int)
            and 0 <= part < len(node)
        ):
            node = node[part]
        else:
            return None
    last = path[-1]
    if isinstance(node, dict) and last in node:
        return node, last
    if isinstance(node, list) and isinstance(last, int) and 0 <= last < len(node):
        return node, last
    return None


def apply(tree: Any, mutation: Mutation) -> Any:
    """``tree`` after ``mutation`` (a deep copy; the seed is never changed)."""
    if mutation.op in RAW_OPERATIONS:
        return tree
    tree = copy.deepcopy(tree)
    if not mutation.path:
        if mutation.op == "set":
            return copy.deepcopy(mutation.value)
        if mutation.op == "wrap":
            return [tree]
        if mutation.op == "empty":
            return type(tree)() if isinstance(tree, (dict, list)) else tree
        if mutation.op == "add_key" and isinstance(tree, dict):
            tree[str(mutation.value)] = 1
        return tree
    found = _parent(tree, mutation.path)
    if found is None:
        return tree
    container, key = found
    if mutation.op == "set":
        container[key] = copy.deepcopy(mutation.value)
    elif mutation.op == "delete":
        del container[key]
    elif mutation.op == "wrap":
        container[key] = [container[key]]
    elif mutation.op == "empty":
        value = container[key]
        container[key] = type(value)() if isinstance(value, (dict, list, str)) else None
    elif mutation.op == "duplicate" and isinstance(container, list):
        container.insert(key, copy.deepcopy(container[key]))
    elif mutation.op == "add_key" and isinstance(container[key], dict):
        container[key][str(mutation.value)] = 1
    return tree


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value) if not isinstance(value, float) else repr(value)


def render(file: SeedFile, tree: Any) -> bytes:
    """A file's bytes in its format (YAML through PyYAML's dumper, JSON allowing NaN as Python
    writes it, CSV rows of cells)."""
    import yaml

    if file.fmt == BYTES:
        return tree if isinstance(tree, bytes) else json.dumps(tree).encode("utf-8")
    if file.fmt == LINES:
        lines = tree if isinstance(tree, list) else [tree]
        return "".join(_cell(line) + "\n" for line in lines).encode("utf-8", "surrogatepass")
    if file.fmt == YAML:
        try:
            text = yaml.safe_dump(tree, allow_unicode=True, sort_keys=False)
        except (yaml.YAMLError, RecursionError):
            text = json.dumps(tree)
    elif file.fmt == JSON:
        text = json.dumps(tree, ensure_ascii=False)
    elif file.fmt == JSONL:
        rows = tree if isinstance(tree, list) else [tree]
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    else:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        for row in tree if isinstance(tree, list) else [tree]:
            writer.writerow(
                [_cell(cell) for cell in row] if isinstance(row, list) else [_cell(row)]
            )
        text = buffer.getvalue()
    return text.encode("utf-8", "surrogatepass")


def _raw(data: bytes, mutation: Mutation) -> bytes:
    """Text-level changes YAML/JSON trees cannot express (a repeated key, stray bytes)."""
    if mutation.op == "raw_append":
        return data + str(mutation.value).encode("utf-8", "surrogatepass")
    if mutation.op == "raw_truncate":
        return data[: int(mutation.value) % (len(data) + 1)]
    if mutation.op == "raw_bytes":
        return data + bytes(mutation.value)
    if mutation.op == "raw_duplicate_line":
        lines = data.splitlines(keepends=True)
        if not lines:
            return data
        index = int(mutation.value) % len(lines)
        return b"".join([*lines[: index + 1], lines[index], *lines[index + 1 :]])
    return data


def build(seed: Seed, mutations: tuple[Mutation, ...]) -> Case:
    """Apply ``mutations`` in order and write out the files."""
    trees: dict[str, Any] = {file.name: file.tree for file in seed.files}
    argv: list[Any] = list(seed.argv)
    added: list[tuple[str, tuple[Any, ...]]] = []  # unknown keys added: (file, full path)
    for mutation in mutations:
        if mutation.target == ARGV:
            argv = _mutate_argv(argv, mutation)
        elif mutation.target in trees:
            strict = mutation.target in seed.strict
            if strict and _adds_unknown_key(trees[mutation.target], mutation, seed):
                added.append((mutation.target, (*mutation.path, str(mutation.value))))
            trees[mutation.target] = apply(trees[mutation.target], mutation)
    # Nonsense only if an added key is still there at the end (a later mutation may delete or
    # replace its mapping) and no raw text change (a truncation) may have cut it away.
    raw = {mutation.target for mutation in mutations if mutation.op in RAW_OPERATIONS}
    nonsense = any(
        target not in raw and _parent(trees[target], path) is not None for target, path in added
    )
    files: list[tuple[str, bytes]] = []
    for file in seed.files:
        data = render(file, trees[file.name])
        for mutation in mutations:
            if mutation.target == file.name and mutation.op in RAW_OPERATIONS:
                data = _raw(data, mutation)
        files.append((file.name, data))
    argv_text = tuple(str(arg) for arg in argv)
    nonsense = nonsense or "--bogus" in argv_text
    return Case(seed.name, mutations, argv_text, tuple(files), nonsense)


def _adds_unknown_key(tree: Any, mutation: Mutation, seed: Seed) -> bool:
    """Whether ``mutation`` adds a key the mapping it targets does not have (outside the seed's
    open, free-form sections): in a strict file, a config that must be refused."""
    if mutation.op != "add_key" or any(part in seed.open_keys for part in mutation.path):
        return False
    node = tree
    for part in mutation.path:
        found = _parent(node, (part,))
        if found is None:
            return False
        node = found[0][found[1]]
    return isinstance(node, dict) and str(mutation.value) not in node


def _mutate_argv(argv: list[Any], mutation: Mutation) -> list[Any]:
    argv = list(argv)
    position = mutation.path[0] if mutation.path else 0
    if mutation.op == "set" and 0 < position < len(argv):
        argv[position] = mutation.value
    elif mutation.op == "delete" and 0 < position < len(argv):
        del argv[position]
    elif mutation.op == "add_key":
        argv.insert(min(max(position, 1), len(argv)), mutation.value)
    elif mutation.op == "duplicate" and 0 < position < len(argv):
        argv.insert(position, argv[position])
    return argv


#: Flags worth adding to a command line (valid and invalid spellings).
_FLAGS = (
    "--json",
    "--overwrite",
    "--no-progress",
    "--tp",
    "--batch",
    "--kv",
    "--kv-total",
    "--prefill-tokens",
    "--draft-length",
    "--scheme",
    "--depth",
    "--table",
    "--estimator",
    "--fallback-policy",
    "--role",
    "--backend",
    "--model",
    "--hardware",
    "--speculation",
    "--draft-config",
    "--draft-model",
    "--out",
    "--bogus",
    "-",
    "--",
    "config.json",
    "gpu.yaml",
    "spec.yaml",
    "replay.yaml",
    "trace.csv",
    ".",
    "out/x",
    "nonexistent.yaml",
    # the commands issue 28 added to the campaign
    "--workers",
    "--merge-over",
    "--rtol",
    "--scenarios",
    "--label",
    "--format",
    "--validation",
    "--name",
    "--version",
    "--tests",
    "--tost-margin",
    "--coefficients",
    "--d",
    "--preset",
    "--drafter",
    "--reps",
    "--seed",
    "--threads",
    "--device",
    "--dtype",
    "sweep.yaml",
    "after.prom",
    "old.json",
    "ds",
    "ds/sd_rounds.parquet.json",
    # a FIFO and a folder in every case folder; a file where a folder goes and the reverse
    "fifo.yaml",
    "adir",
    "adir/x.json",
    "trace.csv/out",
)

_values = st.one_of(
    st.sampled_from(INTERESTING),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)


def _stays_inside(text: str) -> bool:
    """Command-line values never point outside the case's folder (a mutated ``--out /`` must not
    write to the real file system); argv cannot carry NUL."""
    return "\x00" not in text and not text.startswith(("/", "~")) and ".." not in text


#: Paths the campaign puts where a command reads or writes a file: the FIFO and the folder every
#: case folder holds, paths under an input file, and a file inside the folder.
SPECIAL_PATHS = (
    "fifo.yaml",
    "adir",
    "adir/out",
    "trace.csv/out",
    "sweep.yaml/out",
    "replay.yaml/x.json",
    "spec.yaml/x",
)


def _is_path_argument(argv: list[Any], index: int) -> bool:
    """Whether ``argv[index]`` names a file: a value after ``--out`` or a file-taking flag, or
    a positional that names one of the seed's files or its output (``{out}``)."""
    text = str(argv[index])
    previous = str(argv[index - 1])
    if previous in ("--out", "--scenarios", "--speculation", "--draft-config", "--hardware"):
        return True
    if previous in ("--model", "--coefficients", "--table", "--rounds", "--plan"):
        return True
    return not text.startswith("-") and ("." in text or "{out}" in text or text == "ds")


_argv_values = st.one_of(
    st.sampled_from(
        [
            str(value)
            for value in INTERESTING
            if not isinstance(value, (list, dict)) and _stays_inside(str(value))
        ]
    ),
    st.sampled_from(_FLAGS),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.text(max_size=12).filter(_stays_inside),
)


@st.composite
def cases(draw: st.DrawFn, max_mutations: int = 3) -> Case:
    """A seed and 1..``max_mutations`` mutations drawn against the tree as it evolves."""
    seed = draw(st.sampled_from(SEEDS))
    trees: dict[str, Any] = {file.name: file.tree for file in seed.files}
    argv = list(seed.argv)
    mutations: list[Mutation] = []
    targets = [ARGV, *trees]
    binary = {file.name for file in seed.files if file.fmt == BYTES}
    for _ in range(draw(st.integers(1, max_mutations))):
        target = draw(st.sampled_from(targets))
        if target == ARGV and draw(st.integers(0, 4)) == 0:
            # A path argument (an input or --out) swapped for a FIFO, a folder, a path under a
            # file or in a folder: the classes where outputs and inputs broke (issue 28).
            path_positions = [
                i for i, arg in enumerate(argv) if i > 0 and _is_path_argument(argv, i)
            ]
            position = (
                path_positions[draw(st.integers(0, len(path_positions) - 1))]
                if path_positions
                else 1
            )
            mutation = Mutation(ARGV, (position,), "set", draw(st.sampled_from(SPECIAL_PATHS)))
            argv = _mutate_argv(argv, mutation)
        elif target == ARGV:
            op = draw(st.sampled_from(("set", "delete", "add_key", "duplicate")))
            position = draw(st.integers(1, max(1, len(argv))))
            mutation = Mutation(ARGV, (position,), op, draw(_argv_values))
            argv = _mutate_argv(argv, mutation)
        elif target in binary or draw(st.integers(0, 9)) == 0:
            op = draw(st.sampled_from(RAW_OPERATIONS))
            if op == "raw_append":
                value: Any = draw(
                    st.sampled_from(
                        [
                            "\nengine: {}\n",
                            "\ntraffic: 1\n",
                            "\n- [",
                            "\n&a [*a]",
                            "\n0.1,5\n",
                            "\n{}\n",
                            '\n{"timestamp": 1e400}\n',
                            "[" * 200,
                        ]
                    )
                )
            elif op == "raw_bytes":
                value = draw(st.sampled_from([[0xFF], [0x00], [0xEF, 0xBB, 0xBF], [0xC3]]))
            else:
                value = draw(st.integers(0, 10_000))
            mutation = Mutation(target, (), op, value)
        else:
            paths = _paths(trees[target])
            path = paths[draw(st.integers(0, len(paths) - 1))]
            op = draw(st.sampled_from(OPERATIONS))
            value = draw(_values) if op in ("set", "add_key") else None
            mutation = Mutation(target, path, op, value)
            trees[target] = apply(trees[target], mutation)
        mutations.append(mutation)
    return build(seed, tuple(mutations))
