"""Read decoded YAML into a file's schema with cattrs; the first problem becomes one ConfigError line.

cattrs walks the attrs classes and collects every error with the attribute, index or key it
came from; the hooks here make it as strict as a lab file needs (a YAML ``true`` is not the
integer 1, ``'940'`` is not a number, a string is not a list of characters), check each
section's keys once for every schema (unknown keys, missing keys: the checks 32 hand-written
loops used to repeat), run the checks a field declares, and render the first error as
``file: pinet.links[0].mtu must be an integer 68..65535, got 20``.

A schema is an ``attrs.frozen`` class; besides its fields it may say, as class variables:
``schema_open = True`` (keys beyond its fields are someone else's, as labgrid's in a
``NetworkService``), ``schema_label = "name"`` (an item of a list shows that key beside its
index in errors: ``rules[3] (gbe)``), ``schema_noun = "tunables"`` (what its keys are called in
"unknown ..." errors).  A required field's ``metadata=hint("...")`` is the fix shown when it is
missing; ``ABSENT`` as a default tells a key left out from one written as ``null``.  A field
typed ``T | Mapping[K, T]`` takes one value, or a mapping with one per key (an image's kernel
per board model); ``ForKeys`` gives some keys of a mapping checks of their own.

Imported only when a file is read (cattrs and attrs cost tens of milliseconds; a pytest run
that never loads a lab must not pay for them, issue 27).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

import attrs
from cattrs import Converter
from cattrs.cols import homogenous_tuple_structure_factory
from cattrs.errors import AttributeValidationNote, BaseValidationError, IterableValidationNote
from cattrs.gen import make_dict_structure_fn, mapping_structure_factory

from ..errors import ConfigError
from .checks import BadKey, BadKeys, Check, Flag, Integer, Invalid, NotAMapping, Text

T = TypeVar("T")
Hook = Callable[[Any, Any], Any]
_LABEL = re.compile(r"[A-Za-z0-9._+-]{1,64}")


class _Absent:
    """The default of a field whose absence differs from an explicit ``null``."""

    def __repr__(self) -> str:
        return "ABSENT"


# Typed Any so a field keeps its real type (``governor: Annotated[str, ...] = ABSENT``): a
# ``null`` written in the file is then refused by the field's check instead of read as absent.
ABSENT: Any = _Absent()


def hint(fix: str) -> dict[str, str]:
    """Field metadata: what to tell a user whose file lacks this required key."""
    return {"hint": fix}


def structure(data: Any, schema: type[T], source: str, root: str = "") -> T:
    """``data`` as ``schema``, or a ConfigError naming ``source``, the key path under ``root`` and the fix."""
    try:
        return _CONVERTER.structure(data, schema)
    except (Invalid, BaseValidationError) as exc:
        path, problem = _first_problem(exc, data, root)
    if isinstance(problem, Invalid):
        raise ConfigError(source, problem.describe(path), problem.fix) from None
    # A value no check of ours covers (a schema bug, not the user's): still one line, no traceback.
    raise ConfigError(source, f"{path or 'the file'} is not valid: {type(problem).__name__}: {problem}")


def _first_problem(exc: BaseException, raw: Any, path: str) -> tuple[str, BaseException]:
    """Follow cattrs' error groups down to the first error, building its key path on the way."""
    while isinstance(exc, BaseValidationError):
        exc = exc.exceptions[0]
        notes = [
            note
            for note in getattr(exc, "__notes__", [])
            if isinstance(note, AttributeValidationNote | IterableValidationNote)
        ]
        if not notes:
            continue
        note = notes[-1]
        key = note.name if isinstance(note, AttributeValidationNote) else note.index
        path = _step(path, key, raw, note)
        raw = _child(raw, key)
    return path, exc


def _step(path: str, key: Any, raw: Any, note: AttributeValidationNote | IterableValidationNote) -> str:
    """``pinet.links`` + 0 is ``pinet.links[0]``; an item whose schema names a label shows it."""
    if isinstance(note, IterableValidationNote) and isinstance(raw, list):
        step = f"{path}[{key}]"
        label = getattr(note.type, "schema_label", None)
        item = _child(raw, key)
        name = item.get(label) if label and isinstance(item, Mapping) else None
        return f"{step} ({name})" if isinstance(name, str) and _LABEL.fullmatch(name) else step
    return f"{path}.{key}" if path else str(key)


def _child(raw: Any, key: Any) -> Any:
    if isinstance(raw, Mapping):
        return raw.get(key)
    if isinstance(raw, list) and isinstance(key, int) and 0 <= key < len(raw):
        return raw[key]
    return None


def _record_hook(cls: type) -> Hook:
    """A schema class: a mapping with its keys and no others (unless it says ``schema_open``)."""
    structure_fields: Hook = make_dict_structure_fn(cls, _CONVERTER, _cattrs_forbid_extra_keys=False)
    fields = attrs.fields(cls)
    names = [f.name for f in fields]
    required = [f.name for f in fields if f.default is attrs.NOTHING]
    hints = {f.name: f.metadata["hint"] for f in fields if "hint" in f.metadata}
    closed = not getattr(cls, "schema_open", False)
    noun = getattr(cls, "schema_noun", "keys")

    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, Mapping):
            raise NotAMapping(names)
        unknown = sorted((k for k in value if k not in names), key=str) if closed else []
        missing = sorted(n for n in required if n not in value)
        if unknown or missing:
            fix = hints.get(missing[0]) if missing else None  # a key's own hint, else the key list
            known = "known" if noun != "keys" else "allowed" if unknown else "keys"
            raise BadKeys(unknown, missing, noun, fix or f"{known}: {sorted(names)}")
        return structure_fields(value, cls)

    return hook


def _annotated_hook(annotated: Any) -> Hook:
    """``Annotated[T, check, ...]``: the checks see the raw value, then it is structured as T."""
    base, *extras = get_args(annotated)
    checks = [extra for extra in extras if isinstance(extra, Check)]
    inner = _CONVERTER.get_structure_hook(base)

    def hook(value: Any, _: Any) -> Any:
        for check in checks:
            value = check(value)
        return inner(value, base)

    return hook


def _sequence_hook(sequence: Any) -> Hook:
    """``tuple[T, ...]`` from a YAML list, and only a list (a string is not a list of letters)."""
    inner = homogenous_tuple_structure_factory(sequence, _CONVERTER)

    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, list):
            raise Invalid("must be a list")
        return inner(value, sequence)

    return hook


def _mapping_hook(mapping: Any) -> Hook:
    """``Mapping[K, V]``: every key checked first (named at the mapping), then every value."""
    key_type = get_args(mapping)[0] if get_args(mapping) else Any
    inner = mapping_structure_factory(mapping, _CONVERTER)
    check_key = _CONVERTER.get_structure_hook(key_type)

    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, Mapping):
            raise Invalid("must be a mapping")
        for key in value:
            try:
                check_key(key, key_type)
            except Invalid as exc:
                raise BadKey(exc) from None
        return inner(value, mapping)

    return hook


def _one_or_per_key_hook(union: Any) -> Hook:
    """``T | Mapping[K, T]``: one value for all, or a mapping with one per key (an image's kernel,
    or one kernel per board model); a mapping is read as the mapping, anything else as ``T``."""
    one, per_key = get_args(union)
    structure_one = _CONVERTER.get_structure_hook(one)
    structure_per_key = _CONVERTER.get_structure_hook(per_key)

    def hook(value: Any, _: Any) -> Any:
        if isinstance(value, Mapping):
            return structure_per_key(value, per_key)
        return structure_one(value, one)

    return hook


def _strict(check: Check) -> Hook:
    return lambda value, _: check(value)


def _is_annotated(kind: Any) -> bool:
    return get_origin(kind) is Annotated


def _is_sequence(kind: Any) -> bool:
    args = get_args(kind)
    return get_origin(kind) is tuple and len(args) == 2 and args[1] is Ellipsis


def _is_mapping(kind: Any) -> bool:
    return get_origin(kind) in (dict, Mapping)


def _is_one_or_per_key(kind: Any) -> bool:
    args = get_args(kind)
    return (
        get_origin(kind) is Union
        and len(args) == 2
        and _is_mapping(args[1])
        and not _is_mapping(args[0])
        and type(None) not in args
    )


def _is_record(kind: Any) -> bool:
    return isinstance(kind, type) and attrs.has(kind)


def _converter() -> Converter:
    converter = Converter(detailed_validation=True, forbid_extra_keys=False)
    converter.register_structure_hook(str, _strict(Text("must be text, got {value!r}", numbers=False)))
    converter.register_structure_hook(bool, _strict(Flag()))
    converter.register_structure_hook(
        int, _strict(Integer(-(2**63), 2**63 - 1, "must be an integer, got {value!r}"))
    )
    # Later registrations win in cattrs: these replace its lenient defaults for these shapes.
    converter.register_structure_hook_factory(_is_record, _record_hook)
    converter.register_structure_hook_factory(_is_mapping, _mapping_hook)
    converter.register_structure_hook_factory(_is_sequence, _sequence_hook)
    converter.register_structure_hook_factory(_is_one_or_per_key, _one_or_per_key_hook)
    converter.register_structure_hook_factory(_is_annotated, _annotated_hook)
    return converter


_CONVERTER = _converter()
