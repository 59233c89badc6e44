"""The typed edge: one pydantic base and field types that keep aisim's one-line error contract.

Every config file kind is an ``EdgeModel`` tree: speculation, estimator, replay
(``_replay_models``), sweep, model and hardware files, the qualification plan. The rows of trace
files (CSV/JSONL lines, read as they stream) are checked by the typed readers of
``aisim._fields``, with the same error contract. What the base guarantees, so each config kind
only declares its fields:

* a non-mapping, a non-string key or an unknown field is rejected before any field is read, with
  the unknown names and the allowed ones (``speculation: unknown field(s) depht; allowed: ...``);
* ``Annotated[int, Integer(1, 64)]`` accepts integers and integral floats (``2.0``), and rejects
  bools, strings, fractions, NaN and infinities: ``...depth: expected an integer in 1..64, got 0``;
* ``Annotated[float, Number(0.0, 1.0)]`` accepts finite numbers (ints included), not bools,
  strings, NaN or infinities;
* ``Annotated[str, Choice("vllm", "sglang")]`` is a string from a fixed set;
* models are frozen (assignment raises) and strict (no ``"2"`` -> ``2``).

``validate(Model, data, path)`` runs pydantic and turns the first error into one ``ConfigError``
line naming the full field path (``path`` + pydantic's location), the value and what is allowed.
``Model.model_json_schema()`` is what ``aisim schema KIND`` prints. Interpreted, never compiled:
the core takes the frozen objects these models build, never the models.
"""

from __future__ import annotations

import abc
import math
import types
import typing
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar, Final, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema

from aisim._fields import FLOAT_INT_LIMIT, check_tree, describe, integer_text, range_text
from aisim.errors import ConfigError

#: The pydantic error type every aisim check raises; its context carries the finished message.
EDGE_ERROR = "aisim"
#: ``Kinds(select=...)``: the tag under which a block stays a mapping (no usable kind).
RAW: Final = "raw"
#: Marks the tags of ``Kinds`` unions in pydantic's error locations (``location`` drops them:
#: a path names fields, not the member a ``type`` selected).
KIND_TAG: Final = "\x00kind:"

ModelT = TypeVar("ModelT", bound=BaseModel)


def edge_error(message: str, label: str = "") -> PydanticCustomError:
    """A pydantic error whose text is ``message`` verbatim (``label`` follows the field path,
    e.g. ``" (kind mtp)"``)."""
    return PydanticCustomError(EDGE_ERROR, "{message}", {"message": message, "label": label})


def check_field(check: BeforeCheck, value: object, field: str) -> None:
    """For a model's ``after`` validator: ``value`` passes ``check``, or an edge error at
    ``<model path>.<field>`` (a bound that depends on another field: ``max`` at least ``min``)."""
    try:
        check.check(value)
    except PydanticCustomError as exc:
        raise edge_error(exc.context["message"] if exc.context else str(exc), f".{field}") from None


class BeforeCheck(abc.ABC):
    """Base of the field types: ``check`` runs before pydantic's own (strict) validation and
    raises ``edge_error``; ``json_extra`` adds what the check enforces to the JSON Schema."""

    @abc.abstractmethod
    def check(self, value: object) -> Any:
        """``value`` converted for pydantic's strict check, or an ``edge_error``."""

    def json_extra(self) -> dict[str, Any]:
        return {}

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_before_validator_function(self.check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        result = handler(schema)
        result.update(self.json_extra())
        return result


def _bounds(minimum: object, maximum: object) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if minimum is not None:
        extra["minimum"] = minimum
    if maximum is not None:
        extra["maximum"] = maximum
    return extra


class Integer(BeforeCheck):
    """``Annotated[int, Integer(minimum, maximum)]``: an integer, integral floats accepted."""

    def __init__(self, minimum: int | None = None, maximum: int | None = None, label: str = ""):
        self.minimum = minimum
        self.maximum = maximum
        self.label = label

    def check(self, value: object) -> int:
        expected = f"expected an integer{range_text(self.minimum, self.maximum)}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise edge_error(f"{expected}, got {describe(value)}", self.label)
        if isinstance(value, float) and (not math.isfinite(value) or value != math.floor(value)):
            raise edge_error(f"{expected}, got {describe(value)}", self.label)
        result = int(value)
        if (self.minimum is not None and result < self.minimum) or (
            self.maximum is not None and result > self.maximum
        ):
            raise edge_error(f"{expected}, got {integer_text(result)}", self.label)
        return result

    def json_extra(self) -> dict[str, Any]:
        return _bounds(self.minimum, self.maximum)


class Number(BeforeCheck):
    """``Annotated[float, Number(minimum, maximum)]``: a finite real number (ints accepted)."""

    def __init__(
        self, minimum: float | None = None, maximum: float | None = None, label: str = ""
    ) -> None:
        self.minimum = None if minimum is None else float(minimum)
        self.maximum = None if maximum is None else float(maximum)
        self.label = label

    def check(self, value: object) -> float:
        expected = f"expected a finite number{range_text(self.minimum, self.maximum)}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise edge_error(f"{expected}, got {describe(value)}", self.label)
        if isinstance(value, int) and not -FLOAT_INT_LIMIT < value < FLOAT_INT_LIMIT:
            raise edge_error(f"{expected}, got {integer_text(value)}", self.label)
        result = float(value)
        if not math.isfinite(result):
            raise edge_error(f"{expected}, got {describe(value)}", self.label)
        if (self.minimum is not None and result < self.minimum) or (
            self.maximum is not None and result > self.maximum
        ):
            raise edge_error(f"{expected}, got {result!r}", self.label)
        return result

    def json_extra(self) -> dict[str, Any]:
        return _bounds(self.minimum, self.maximum)


class Choice(BeforeCheck):
    """``Annotated[str, Choice("vllm", "sglang")]``: one string of a fixed set."""

    def __init__(self, *choices: str) -> None:
        self.choices = choices

    def check(self, value: object) -> str:
        if not isinstance(value, str):
            raise edge_error(f"expected a string, got {describe(value)}")
        if value not in self.choices:
            raise edge_error(f"expected one of {', '.join(self.choices)}, got {value!r}")
        return value

    def json_extra(self) -> dict[str, Any]:
        return {"enum": list(self.choices)}


class OrNone(BeforeCheck):
    """``Annotated[int | None, OrNone(Integer(1, 64))] = None``: ``None`` (a JSON ``null``, or
    the field left out) passes; anything else must pass ``inner``."""

    def __init__(self, inner: BeforeCheck) -> None:
        self.inner = inner

    def check(self, value: object) -> Any:
        return None if value is None else self.inner.check(value)

    def json_extra(self) -> dict[str, Any]:
        return self.inner.json_extra()


class Kinds:
    """``Annotated[FixedCapacity | DefaultCapacity, Kinds()]``: a block whose ``type`` field
    (``field``) selects its model, validated with that model (a discriminated union).

    A non-mapping, a missing ``type`` (unless ``default`` names one) or an unknown one is one
    error at ``<path>.type`` listing the allowed values; the selected model's errors keep the
    full field path (the tag pydantic puts in the location is dropped). Each member declares
    ``type: Literal[...]`` (a model may take several values: ``normal``/``lognormal``).
    ``scalar``: a number in place of the block is accepted and checked by it (a length given
    as ``512``). ``select``: the tag comes from outside the block (a scheduler's model is the
    engine's backend, a speculation's params model its kind): ``select()`` returns it, each
    model's tag is ``tags[model]`` (default its ``edge_kind``), and the block has no ``type``
    field; a ``dict[str, Any]`` member takes the block as a mapping when ``select()`` returns
    ``RAW`` (no usable kind: the kind's own error is reported elsewhere).
    """

    def __init__(
        self,
        field: str = "type",
        default: str | None = None,
        scalar: BeforeCheck | None = None,
        select: typing.Callable[[], str] | None = None,
        tags: Mapping[type, str] | None = None,
    ) -> None:
        self.field = field
        self.default = default
        self.scalar = scalar
        self.select = select
        self.tags = dict(tags or {})

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        choices: dict[str, core_schema.CoreSchema] = {}
        values: list[str] = []
        by_class: dict[type, str] = {}
        for member in union_members(source):
            if member is int:
                choices[KIND_TAG + "int"] = core_schema.int_schema(strict=True)
                continue
            if typing.get_origin(member) is dict:
                choices[KIND_TAG + RAW] = handler.generate_schema(member)
                continue
            schema = handler.generate_schema(member)
            for value in self._values(member):
                values.append(value)
                choices[KIND_TAG + value] = schema
                by_class.setdefault(member, value)
        allowed = Choice(*values)
        field, default, scalar, select = self.field, self.default, self.scalar, self.select

        def check(value: object) -> object:
            if isinstance(value, BaseModel):
                return value  # validated already: its model's schema takes it as it is
            if (
                scalar is not None
                and isinstance(value, (int, float))
                and not isinstance(value, bool)
            ):
                return scalar.check(value)
            mapping = check_mapping(value)
            if select is None:
                try:
                    allowed.check(mapping.get(field, default))
                except PydanticCustomError as exc:
                    raise edge_error(
                        exc.context["message"] if exc.context else str(exc), f".{field}"
                    ) from None
            return mapping

        def tag(value: object) -> str:
            if isinstance(value, int):
                return KIND_TAG + "int"
            if isinstance(value, BaseModel) and type(value) in by_class:
                return KIND_TAG + by_class[type(value)]
            if select is not None:
                return KIND_TAG + select()
            if isinstance(value, BaseModel):
                return KIND_TAG + str(getattr(value, field))
            assert isinstance(value, dict)
            return KIND_TAG + str(value.get(field, default))

        union = core_schema.tagged_union_schema(choices, tag)
        return core_schema.no_info_before_validator_function(check, union)

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        result = handler(schema)
        if self.select is not None and "oneOf" in result:
            # The members may share every field a block gives (the backend picks the model,
            # not the block): any of them, not exactly one.
            result["anyOf"] = result.pop("oneOf")
        return result

    def _values(self, member: Any) -> tuple[str, ...]:
        if self.select is not None:
            tag = self.tags.get(member)
            return (member.edge_kind if tag is None else tag,)
        annotation = member.model_fields[self.field].annotation
        if typing.get_origin(annotation) is not Literal:
            raise TypeError(f"{member.__name__}.{self.field} must be a Literal")
        return tuple(str(value) for value in typing.get_args(annotation))


class NameOr:
    """``Annotated[str | ModelFile, NameOr("a model name or config.json path")]``: a name (or a
    file path, read later against the file that names it) or the block itself, validated by
    its model; anything else is one error: ``expected <what>, got ...``. A member that is
    neither ``str`` nor a model (``ModelSpec``, ``ResolvedSpeculation``) is a value resolved
    already, taken as it is (API callers hand those in; the JSON Schema does not show them).
    Without a ``str`` member a string is refused like any other non-mapping."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        members = union_members(source)
        named = str in members
        model = next(
            member
            for member in members
            if isinstance(member, type) and issubclass(member, BaseModel)
        )
        resolved = tuple(
            member
            for member in members
            if member is not str
            and not (isinstance(member, type) and issubclass(member, BaseModel))
        )
        block = handler.generate_schema(model)
        choices: dict[str, core_schema.CoreSchema] = {KIND_TAG + "block": block}
        if named:
            choices[KIND_TAG + "name"] = core_schema.str_schema(strict=True)
        for index, kind in enumerate(resolved):
            choices[f"{KIND_TAG}resolved{index}"] = core_schema.is_instance_schema(kind)
        what = self.what

        def check(value: object) -> object:
            if (named and isinstance(value, str)) or isinstance(value, (BaseModel, *resolved)):
                return value
            if isinstance(value, Mapping):
                return check_mapping(value)
            raise edge_error(f"expected {what}, got {describe(value)}")

        def tag(value: object) -> str:
            for index, kind in enumerate(resolved):
                if isinstance(value, kind):
                    return f"{KIND_TAG}resolved{index}"
            return KIND_TAG + ("name" if isinstance(value, str) else "block")

        union = core_schema.tagged_union_schema(choices, tag)
        # The JSON Schema shows what a file may hold: the name and the block, not the
        # resolved values an API caller may hand in.
        input_schema = (
            core_schema.union_schema([core_schema.str_schema(), block]) if named else block
        )
        return core_schema.no_info_before_validator_function(
            check, union, json_schema_input_schema=input_schema
        )


class RealNumber:
    """``Annotated[float, RealNumber()]``: a number (an int stays an int) whose allowed range
    depends on other fields, so it is checked once they are known (an acceptance length is in
    1..depth + 1); a string, bool or anything else is refused here, at its path."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            _real_number, json_schema_input_schema=core_schema.float_schema()
        )


def _real_number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise edge_error(f"expected a number, got {describe(value)}")
    return value


def union_members(kind: Any) -> tuple[Any, ...]:
    """The members of a union type (``A | B``), or ``(kind,)``."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return typing.get_args(kind)
    return (kind,)


#: The engine's backend while its workers are validated (``Engine`` sets it): a worker's
#: ``scheduler`` block is read by the backend's model.
ENGINE_BACKEND: ContextVar[str] = ContextVar("aisim_engine_backend", default="vllm")


@contextmanager
def engine_backend(backend: str) -> Iterator[None]:
    """Validate a worker block (its scheduler) as one of an engine on ``backend``."""
    token = ENGINE_BACKEND.set(backend)
    try:
        yield
    finally:
        ENGINE_BACKEND.reset(token)


def current_backend() -> str:
    return ENGINE_BACKEND.get()


class Section:
    """``Annotated[list[Any] | None, Section(list[AgenticRequest])] = None``: a value the
    models pass on as it is, for a reader that reads the same rows from files too (inline
    agentic requests: the trace-row reader, one set of messages for both); the JSON Schema
    shows ``schema_type``, or ``null`` (the value left out) unless ``nullable=False``."""

    def __init__(self, schema_type: Any, nullable: bool = True) -> None:
        self.schema_type = schema_type
        self.nullable = nullable

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        shown = handler.generate_schema(self.schema_type)
        if self.nullable:
            shown = core_schema.nullable_schema(shown)
        return core_schema.no_info_plain_validator_function(
            _unchanged, json_schema_input_schema=shown
        )


def _unchanged(value: object) -> object:
    return value


def check_mapping(value: object) -> dict[str, Any]:
    """``value`` as a ``dict`` with string keys, or an edge error."""
    if not isinstance(value, Mapping):
        raise edge_error(f"expected a mapping, got {describe(value)}")
    for key in value:
        if not isinstance(key, str):
            raise edge_error(f"mapping keys must be strings, got key {describe(key)}")
    return dict(value)


def check_mapping_at(value: object, path: str) -> dict[str, Any]:
    """``check_mapping`` for a block read outside a model: one ``ConfigError`` at ``path``."""
    try:
        return check_mapping(value)
    except PydanticCustomError as exc:
        raise ConfigError(
            f"{path or '<root>'}: {exc.context['message'] if exc.context else exc}"
        ) from None


class EdgeModel(BaseModel):
    """Base of every config model: frozen, strict, unknown fields rejected with the allowed list.

    ``edge_label`` follows the path in the unknown-field message (``" (kind mtp)"``).
    ``edge_ignores_unknown`` is for files written by other tools (a Hugging Face
    ``config.json`` carries dozens of fields aisim does not read): their unknown fields are
    dropped, not rejected; such a model also sets ``extra="ignore"`` so its schema says so.
    ``edge_null_is_absent``: a ``null`` value counts as the field left out (its default, or
    ``required field is missing``), as Hugging Face configs write absent fields.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    edge_label: ClassVar[str] = ""
    #: Follows the unknown names in that message (``" for backend vllm"``).
    edge_unknown_note: ClassVar[str] = ""
    edge_ignores_unknown: ClassVar[bool] = False
    edge_null_is_absent: ClassVar[bool] = False
    #: The mapping's shape, said when something else is given (``{path: FILE, ...}``): for a
    #: block a user may write as a bare value (a file name where a mapping goes).
    edge_shape: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _edge_mapping(cls, data: Any) -> Any:
        if isinstance(data, BaseModel):
            return data
        if cls.edge_shape and not isinstance(data, Mapping):
            raise edge_error(f"expected a mapping {cls.edge_shape}, got {describe(data)}")
        mapping = check_mapping(data)
        allowed = _ALLOWED_FIELDS.get(cls)
        if allowed is None:
            allowed = frozenset(field.alias or name for name, field in cls.model_fields.items())
            _ALLOWED_FIELDS[cls] = allowed
        if cls.edge_null_is_absent:
            mapping = {key: item for key, item in mapping.items() if item is not None}
        if cls.edge_ignores_unknown:
            return {key: item for key, item in mapping.items() if key in allowed}
        unknown = sorted(key for key in mapping if key not in allowed)
        if unknown:
            raise edge_error(
                f"unknown field(s) {', '.join(unknown)}{cls.edge_unknown_note}; "
                f"allowed: {', '.join(sorted(allowed))}",
                cls.edge_label,
            )
        return mapping


#: Each model's field names (aliases where given), computed on first validation.
_ALLOWED_FIELDS: dict[type, frozenset[str]] = {}


def location(base: str, loc: tuple[int | str, ...]) -> str:
    """``location("engine", ("workers", "decode", "tables", 0)) == "engine.workers.decode.tables[0]"``."""
    text = base
    for part in loc:
        if isinstance(part, str) and part.startswith(KIND_TAG):
            continue
        if isinstance(part, int):
            text += f"[{part}]"
        elif text:
            text += "." + part
        else:
            text = part
    return text


_BUILTIN_MESSAGES: dict[str, str] = {
    "missing": "required field is missing",
    "string_type": "expected a string",
    "bool_type": "expected true or false",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "int_type": "expected an integer",
    "float_type": "expected a finite number",
    "finite_number": "expected a finite number",
}


def error_message(exc: ValidationError, path: str) -> str:
    """The one-line message for the first error of ``exc``, every location under ``path``."""
    first = exc.errors(include_url=False)[0]
    where = location(path, tuple(first["loc"]))
    context = first.get("ctx") or {}
    if first["type"] == EDGE_ERROR:
        return f"{where or '<root>'}{context.get('label', '')}: {context['message']}"
    if first["type"] == "missing":
        return f"{where}: {_BUILTIN_MESSAGES['missing']}"
    if first["type"] == "literal_error":
        return f"{where}: expected one of {context.get('expected')}, got {first['input']!r}"
    if first["type"] in _BUILTIN_MESSAGES:
        text = _BUILTIN_MESSAGES[first["type"]]
        return f"{where or '<root>'}: {text}, got {describe(first['input'])}"
    return f"{where or '<root>'}: {first['msg']}, got {describe(first['input'])}"


def validate_field(model: type[ModelT], data: object, field: str) -> ModelT:
    """For a model's ``after`` validator: ``data`` (the value of its field ``field``) validated
    as ``model``, its errors under ``<model path>.<field>`` (a block whose model depends on
    another field: a draft's ``config.json`` on the speculation kind)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        details: list[InitErrorDetails] = []
        for error in exc.errors(include_url=False):
            context = error.get("ctx") or {}
            kind: str | PydanticCustomError = error["type"]
            if kind == EDGE_ERROR:
                kind = PydanticCustomError(EDGE_ERROR, "{message}", context)
            detail = InitErrorDetails(type=kind, loc=(field, *error["loc"]), input=error["input"])
            if context and not isinstance(kind, PydanticCustomError):
                detail["ctx"] = context
            details.append(detail)
        raise ValidationError.from_exception_data(exc.title, details) from None


def validate(model: type[ModelT], data: object, path: str = "") -> ModelT:
    """``model`` validated from ``data``; any failure is one ``ConfigError`` under ``path``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(error_message(exc, path)) from None


def check_input(data: object, path: str = "") -> None:
    """The one rule every config kind keeps over its whole input (``aisim._fields.check_tree``:
    string keys, finite numbers), also inside values the models pass on untyped (a sweep's
    ``base``, a draft's ``config.json``). Each entry point calls it once its typed checks have
    passed, so those keep their more specific messages."""
    check_tree(data, path)


_ADAPTERS: dict[object, TypeAdapter[Any]] = {}


def check(kind: Any, value: object, path: str) -> Any:
    """``value`` validated as the (annotated) type ``kind`` at ``path``; one ``ConfigError``.

    ``kind`` should be a module-level type: its validator is built once and cached by identity
    (building one costs ~0.5 ms). For a single value whose bounds are known only after other
    fields are read, use ``integer``/``number``/``choice`` instead.
    """
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        adapter = TypeAdapter(kind, config=ConfigDict(strict=True))
        if len(_ADAPTERS) < 256:
            _ADAPTERS[kind] = adapter
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        raise ConfigError(error_message(exc, path)) from None


def integer(
    value: object,
    path: str,
    minimum: int | None = None,
    maximum: int | None = None,
    label: str = "",
) -> int:
    """``value`` as an integer (the ``Integer`` rules) or a ``ConfigError`` at ``path``."""
    try:
        return Integer(minimum, maximum, label).check(value)
    except PydanticCustomError as exc:
        raise ConfigError(
            f"{path}{label}: {exc.context['message'] if exc.context else exc}"
        ) from None


def choice(value: object, path: str, choices: tuple[str, ...]) -> str:
    """``value`` as one of ``choices`` (the ``Choice`` rules) or a ``ConfigError`` at ``path``."""
    try:
        return Choice(*choices).check(value)
    except PydanticCustomError as exc:
        raise ConfigError(f"{path}: {exc.context['message'] if exc.context else exc}") from None


def number(
    value: object, path: str, minimum: float | None = None, maximum: float | None = None
) -> float:
    """``value`` as a finite number (the ``Number`` rules) or a ``ConfigError`` at ``path``."""
    try:
        return Number(minimum, maximum).check(value)
    except PydanticCustomError as exc:
        raise ConfigError(f"{path}: {exc.context['message'] if exc.context else exc}") from None
