"""Updates: replacement documents, the update operators, pipeline updates and upsert seeds.

:class:`Update` parses an update once (a bad update is reported before any document is
touched) and :meth:`Update.apply` changes one document in place, returning whether it changed
(nModified counts byte-wise changes, so ``$set`` of an equal value is not a modification).
Callers that need atomicity pass a copy and keep the original if apply raises.

As in mongod 5.0+, an update's fields are processed in lexicographic order of their paths
(numeric components numerically), so new fields appear in that order, and an operator with an
empty operand (``{$set: {}}``) is a no-op rather than an error.  An update made with a
:class:`~.collation.Collation` compares strings under it where mongod's does: arrayFilters, the
positional $, $min/$max, $pull/$pullAll, $addToSet, $push's $sort, and a pipeline's stages.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.bson import Regex, Timestamp
from mongo_sansio.testing.engine.errors import (
    CommandError,
    bad_value,
    failed_to_parse,
    type_mismatch,
)
from mongo_sansio.testing.engine.numbers import binary_arithmetic
from mongo_sansio.testing.engine.order import (
    MISSING,
    compare,
    copy_value,
    is_number,
    numeric_value,
    render,
    sort_key_for,
    strict_equal,
    type_name,
    values_equal,
    whole_number,
)
from mongo_sansio.testing.engine.paths import get_path, is_index, set_path, split_path, unset_path
from mongo_sansio.testing.engine.query import (
    compile_filter,
    compile_value_condition,
    first_matching_index,
    is_operator_document,
)

if TYPE_CHECKING:
    from mongo_sansio.testing.engine.collation import Collation

__all__ = ["Update", "upsert_seed", "check_replacement"]

_OPERATORS = (
    "$set", "$unset", "$inc", "$mul", "$min", "$max", "$rename", "$push", "$addToSet",
    "$pull", "$pullAll", "$pop", "$currentDate", "$setOnInsert",
)
_PUSH_MODIFIERS = ("$each", "$slice", "$sort", "$position")


def _immutable_id() -> CommandError:
    return CommandError(
        66, "ImmutableField",
        "Performing an update on the path '_id' would modify the immutable field '_id'",
    )


def check_replacement(replacement: Any) -> None:
    """A replacement document may not hold $-prefixed top-level fields (mongod's 52)."""
    if not isinstance(replacement, Mapping):
        raise failed_to_parse("the replacement document must be an object")
    for key in replacement:
        if isinstance(key, str) and key.startswith("$"):
            raise CommandError(
                52, "DollarPrefixedFieldName",
                f"The dollar ($) prefixed field '{key}' in '{key}' is not allowed in the context of "
                "an update's replacement document. Consider using an aggregation pipeline with "
                "$replaceWith.",
            )


def _check_dollar_prefixed_targets(operations: list[tuple[str, str, Any]]) -> None:
    """mongod 5.0+ lets an insert (and the insert of an upsert) store a $-prefixed top-level
    field, but an update operator writing one into an existing document is refused with
    DollarPrefixedFieldName (52), in the wording of a replacement's refusal; removing one
    ($unset) is allowed."""
    for operator, path, _value in operations:
        first = path.split(".", 1)[0]
        if operator in ("$unset", "$setOnInsert") or not first.startswith("$"):
            continue
        if first == "$" or first.startswith("$["):
            continue  # a positional operator, refused (or resolved) elsewhere
        raise CommandError(
            52, "DollarPrefixedFieldName",
            f"The dollar ($) prefixed field '{first}' in '{path}' is not allowed in the context of "
            "an update's replacement document. Consider using an aggregation pipeline with "
            "$replaceWith.",
        )


def _path_order(path: str) -> list[tuple[int, int, str]]:
    return [(0, int(p), "") if is_index(p) else (1, 0, p) for p in path.split(".")]


def _conflict(left: list[str], right: list[str]) -> bool:
    shorter = min(len(left), len(right))
    return left[:shorter] == right[:shorter]


class Update:
    """A parsed update: a replacement document, operators, or a pipeline (a list of stages)."""

    def __init__(
        self, spec: Any, *, array_filters: list[Any] | None = None, collation: Collation | None = None
    ) -> None:
        self.spec = spec
        self.collation = collation
        self.pipeline: list[Any] | None = None
        self.replacement: dict[str, Any] | None = None
        self.operations: list[tuple[str, str, Any]] = []
        self.array_filters = _parse_array_filters(array_filters, collation)
        if array_filters and not (isinstance(spec, Mapping) and spec and str(next(iter(spec))).startswith("$")):
            raise failed_to_parse("arrayFilters may only be specified with an update-operator update")
        if isinstance(spec, list):
            from mongo_sansio.testing.engine.aggregate import check_update_pipeline

            check_update_pipeline(spec)
            self.pipeline = spec
            return
        if not isinstance(spec, Mapping):
            raise failed_to_parse("Update argument must be either an object or an array")
        keys = list(spec)
        if not keys or not str(keys[0]).startswith("$"):
            check_replacement(spec)
            self.replacement = dict(spec)
            return
        for operator, argument in spec.items():
            if operator not in _OPERATORS:
                raise failed_to_parse(
                    f"Unknown modifier: {operator}. Expected a valid update modifier or "
                    "pipeline-style update specified as an array"
                )
            if not isinstance(argument, Mapping):
                raise failed_to_parse(
                    f"Modifiers operate on fields but we found type {type_name(argument)} instead. "
                    f"For example: {{$mod: {{<field>: ...}}}} not {{{operator}: {render(argument)}}}"
                )
            for path, value in argument.items():
                self._check_path(path)
                self._validate(operator, path, value)
                self.operations.append((operator, path, value))
        self._check_conflicts()
        self._check_array_filters_used()
        self.operations.sort(key=lambda op: _path_order(op[1]))

    def _check_array_filters_used(self) -> None:
        used: set[str] = set()
        for _operator, path, _value in self.operations:
            for part in split_path(path):
                if part.startswith("$[") and part.endswith("]") and part != "$[]":
                    identifier = part[2:-1]
                    if identifier not in self.array_filters:
                        raise bad_value(f"No array filter found for identifier '{identifier}' in path '{path}'")
                    used.add(identifier)
        for identifier in self.array_filters:
            if identifier not in used:
                raise failed_to_parse(
                    f"The array filter for identifier '{identifier}' was not used in the update "
                    f"{render(self.spec)}"
                )

    @property
    def is_replacement(self) -> bool:
        return self.replacement is not None

    def _check_path(self, path: str) -> None:
        if path == "":
            raise CommandError(56, "EmptyFieldName", "An empty update path is not valid.")
        if "" in path.split("."):
            raise CommandError(
                56, "EmptyFieldName",
                f"The update path '{path}' contains an empty field name, which is not allowed.",
            )

    def _validate(self, operator: str, path: str, value: Any) -> None:
        if operator in ("$inc", "$mul") and not is_number(value):
            verb = "increment" if operator == "$inc" else "multiply"
            raise type_mismatch(f"Cannot {verb} with non-numeric argument: {{{path}: {render(value)}}}")
        if operator == "$rename":
            if not isinstance(value, str):
                raise bad_value(f"The 'to' field for $rename must be a string: {path}: {render(value)}")
            if value == path:
                raise bad_value(f"The source and target field for $rename must differ: {path}: {render(value)}")
            if "$" in value or "$" in path:
                raise bad_value("The source field for $rename may not be dynamic: " + path)
            self._check_path(value)
        if operator == "$pop" and not (is_number(value) and numeric_value(value) in (1, -1)):
            raise failed_to_parse(f"$pop expects 1 or -1, found: {render(value)}")
        if operator == "$pullAll" and not isinstance(value, list):
            raise bad_value(f"$pullAll requires an array argument but was given a {type_name(value)}")
        if operator == "$currentDate":
            if not isinstance(value, bool) and not (
                isinstance(value, Mapping) and list(value) == ["$type"] and value["$type"] in ("date", "timestamp")
            ):
                raise bad_value(
                    f"{path} is not valid type for $currentDate. Please use a boolean ('true') or "
                    "a $type expression ({$type: 'timestamp/date'})."
                )
        if operator in ("$push", "$addToSet") and isinstance(value, Mapping) and "$each" in value:
            if not isinstance(value["$each"], list):
                raise bad_value(
                    f"The argument to $each in {operator} must be an array but it was of type: "
                    f"{type_name(value['$each'])}"
                )
            for key in value:
                allowed = _PUSH_MODIFIERS if operator == "$push" else ("$each",)
                if key not in allowed:
                    clause = "$push" if operator == "$push" else "$addToSet"
                    raise bad_value(f"Unrecognized clause in {clause}: {key}")

    def _check_conflicts(self) -> None:
        targets: list[str] = []
        for operator, path, value in self.operations:
            targets.append(path)
            if operator == "$rename":
                targets.append(value)
        split = [t.split(".") for t in targets]
        for i, left in enumerate(split):
            for right in split[i + 1:]:
                if _conflict(left, right):
                    shorter = left if len(left) <= len(right) else right
                    longer = right if shorter is left else left
                    raise CommandError(
                        40, "ConflictingUpdateOperators",
                        f"Updating the path '{'.'.join(longer)}' would create a conflict at "
                        f"'{'.'.join(shorter)}'",
                    )

    # --- applying --------------------------------------------------------------------------

    def apply(
        self,
        document: dict[str, Any],
        *,
        now: datetime.datetime | None = None,
        inserting: bool = False,
        filter: Mapping[str, Any] | None = None,  # noqa: A002
    ) -> bool:
        """Change ``document`` in place; True when its bytes changed."""
        before = copy_value(document)
        original_id = document.get("_id", MISSING)
        if self.replacement is not None:
            new = copy_value(self.replacement)
            if "_id" in new and original_id is not MISSING and not strict_equal(new["_id"], original_id):
                raise CommandError(
                    66, "ImmutableField",
                    "After applying the update, the (immutable) field '_id' was found to have "
                    f"been altered to _id: {render(new['_id'])}",
                )
            document.clear()
            if original_id is not MISSING:
                document["_id"] = original_id
            document.update({k: v for k, v in new.items() if k != "_id" or original_id is MISSING})
        elif self.pipeline is not None:
            from mongo_sansio.testing.engine.aggregate import run_pipeline

            results = run_pipeline([copy_value(document)], self.pipeline, now=now, collation=self.collation)
            new = results[0] if results else {}
            if original_id is not MISSING and "_id" not in new:
                # mongod keeps the document's _id when the pipeline's result has none
                new = {"_id": original_id, **new}
            if original_id is not MISSING and not strict_equal(new.get("_id", MISSING), original_id):
                raise _immutable_id()
            document.clear()
            document.update(new)
        else:
            if not inserting:
                _check_dollar_prefixed_targets(self.operations)
            for operator, path, value in self.operations:
                if operator == "$setOnInsert":
                    if not inserting:
                        continue
                    operator = "$set"
                for concrete in _expand_positional(document, path, filter, inserting, self.array_filters,
                                                   self.collation):
                    try:
                        _apply_one(document, operator, concrete, value, now, self.collation)
                    except (ArithmeticError, ValueError) as exc:
                        raise bad_value(
                            f"Failed to apply {operator} operations to the value at '{path}' for "
                            f"document {_where(document)}: {exc}"
                        ) from None
            if original_id is not MISSING and not strict_equal(document.get("_id", MISSING), original_id):
                raise _immutable_id()
        return not strict_equal(before, document)


def _parse_array_filters(
    array_filters: list[Any] | None, collation: Collation | None
) -> dict[str, Callable[[Any], bool]]:
    """arrayFilters: identifier -> a test on one array element (the filter sees it as the
    identifier's value, so ``{"x.b": 1}`` looks at field b of the element)."""
    if array_filters is None:
        return {}
    if not isinstance(array_filters, list):
        raise CommandError(14, "TypeMismatch", "arrayFilters must be an array")
    by_identifier: dict[str, Callable[[Any], bool]] = {}
    for entry in array_filters:
        if not isinstance(entry, Mapping) or not entry:
            raise failed_to_parse("Cannot use an expression without a top-level field name in arrayFilters")
        identifiers = {str(key).split(".")[0] for key in entry if not str(key).startswith("$")}
        if len(identifiers) != 1:
            raise failed_to_parse(
                "Error parsing array filter :: caused by :: Expected a single top-level field name, "
                f"found {len(identifiers)}"
            )
        identifier = identifiers.pop()
        if not identifier.isalnum() or not identifier[0].islower():
            raise bad_value(
                "Error parsing array filter :: caused by :: The top-level field name must be an "
                f"alphanumeric string beginning with a lowercase letter, found '{identifier}'"
            )
        if identifier in by_identifier:
            raise failed_to_parse(f"Found multiple array filters with the same top-level field name {identifier}")
        predicate = compile_filter(entry, collation)
        by_identifier[identifier] = _element_filter(identifier, predicate)
    return by_identifier


def _element_filter(identifier: str, predicate: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda element: predicate({identifier: element})


def _expand_positional(
    document: dict[str, Any],
    path: str,
    filter: Mapping[str, Any] | None,  # noqa: A002
    inserting: bool,
    array_filters: Mapping[str, Callable[[Any], bool]],
    collation: Collation | None,
) -> list[list[str]]:
    parts = split_path(path)
    if not any(part.startswith("$") for part in parts):
        return [parts]
    expanded: list[list[str]] = [[]]
    for i, part in enumerate(parts):
        if part == "$":
            index = None if inserting else first_matching_index(document, filter, parts[:i], collation)
            if index is None:
                raise bad_value("The positional operator did not find the match needed from the query.")
            expanded = [prefix + [str(index)] for prefix in expanded]
        elif part.startswith("$[") and part.endswith("]"):
            element_test = array_filters.get(part[2:-1]) if part != "$[]" else None
            grown: list[list[str]] = []
            for prefix in expanded:
                array = get_path(document, prefix)
                if not isinstance(array, list):
                    if inserting and array is MISSING:
                        continue  # an upsert's new document has no arrays to update yet
                    raise bad_value(
                        f"The path '{'.'.join(prefix)}' must exist in the document in order to "
                        "apply array updates."
                    )
                grown.extend(
                    prefix + [str(n)]
                    for n, element in enumerate(array)
                    if element_test is None or element_test(element)
                )
            expanded = grown
        else:
            expanded = [prefix + [part] for prefix in expanded]
    return expanded


def _where(document: Mapping[str, Any]) -> str:
    return f"{{_id: {render(document.get('_id'))}}}" if "_id" in document else "{}"


def _apply_one(
    document: dict[str, Any], operator: str, parts: list[str], value: Any, now: datetime.datetime | None,
    collation: Collation | None,
) -> None:
    current = get_path(document, parts)
    path = ".".join(parts)
    if operator == "$set":
        if not strict_equal(current, value):
            set_path(document, parts, copy_value(value))
    elif operator == "$unset":
        unset_path(document, parts)
    elif operator in ("$inc", "$mul"):
        if current is MISSING:
            zero = binary_arithmetic(value, value, lambda a, b: a * 0)
            set_path(document, parts, value if operator == "$inc" else zero)
            return
        if not is_number(current):
            raise type_mismatch(
                f"Cannot apply {operator} to a value of non-numeric type. {_where(document)} has "
                f"the field '{parts[-1]}' of non-numeric type {type_name(current)}"
            )
        op: Callable[[Any, Any], Any] = (lambda a, b: a + b) if operator == "$inc" else (lambda a, b: a * b)
        set_path(document, parts, binary_arithmetic(current, value, op))
    elif operator in ("$min", "$max"):
        if current is MISSING:
            set_path(document, parts, copy_value(value))
            return
        order = compare(value, current, collation)
        if (order < 0) if operator == "$min" else (order > 0):
            set_path(document, parts, copy_value(value))
    elif operator == "$rename":
        _rename(document, parts, split_path(value))
    elif operator == "$currentDate":
        if now is None:
            raise bad_value("$currentDate needs the current time (the engine was given none)")
        if isinstance(value, Mapping) and value.get("$type") == "timestamp":
            stamp = now if now.tzinfo else now.replace(tzinfo=datetime.UTC)
            set_path(document, parts, Timestamp(int(stamp.timestamp()), 1))
        else:
            set_path(document, parts, now.replace(microsecond=now.microsecond // 1000 * 1000))
    elif operator == "$pop":
        if current is MISSING:
            return
        array = _array_at(document, parts, current, "$pop")
        if array:
            array.pop(0 if numeric_value(value) == -1 else -1)
    elif operator in ("$pull", "$pullAll"):
        if current is MISSING:
            return
        if not isinstance(current, list):
            raise bad_value(f"Cannot apply {operator} to a non-array value")
        if operator == "$pullAll":
            keep = [e for e in current if not any(values_equal(e, v, collation) for v in value)]
        else:
            test = _pull_test(value, collation)
            keep = [e for e in current if not test(e)]
        current[:] = keep
    elif operator == "$push":
        _push(document, parts, current, value, collation)
    elif operator == "$addToSet":
        if current is MISSING:
            current = []
            set_path(document, parts, current)
        elif not isinstance(current, list):
            raise bad_value(
                f"Cannot apply $addToSet to non-array field. Field named '{parts[-1]}' has "
                f"non-array type {type_name(current)}"
            )
        items = value["$each"] if isinstance(value, Mapping) and "$each" in value else [value]
        for item in items:
            if not any(values_equal(item, e, collation) for e in current):
                current.append(copy_value(item))
    else:  # pragma: no cover - the parser admits only the operators above
        raise failed_to_parse(f"Unknown modifier: {operator} at {path}")


def _array_at(document: Mapping[str, Any], parts: list[str], current: Any, operator: str) -> list[Any]:
    if not isinstance(current, list):
        raise bad_value(
            f"Path '{'.'.join(parts)}' contains an element of non-array type '{type_name(current)}'"
        )
    return current


def _rename(document: dict[str, Any], source: list[str], target: list[str]) -> None:
    for parts, role in ((source, "source"), (target, "destination")):
        for i in range(1, len(parts)):
            if isinstance(get_path(document, parts[:i]), list):
                raise bad_value(
                    f"The {role} field cannot be an array element, '{'.'.join(parts)}' in doc "
                    f"with _id: {render(document.get('_id'))} has an array field called "
                    f"'{'.'.join(parts[:i])}'"
                )
    value = get_path(document, source)
    if value is MISSING:
        return
    unset_path(document, source)
    set_path(document, target, value)


def _pull_test(condition: Any, collation: Collation | None) -> Callable[[Any], bool]:
    if isinstance(condition, Mapping) and condition:
        if is_operator_document(condition):
            values_test = compile_value_condition(condition, collation)
            return lambda element: values_test([element])
        document_test = compile_filter(condition, collation)
        return lambda element: isinstance(element, Mapping) and document_test(element)
    if isinstance(condition, Regex | re.Pattern):
        values_test = compile_value_condition(condition)
        return lambda element: values_test([element])
    return lambda element: values_equal(element, condition, collation)


def _push(document: dict[str, Any], parts: list[str], current: Any, value: Any, collation: Collation | None) -> None:
    if current is MISSING:
        current = []
        set_path(document, parts, current)
    elif not isinstance(current, list):
        raise bad_value(
            f"The field '{'.'.join(parts)}' must be an array but is of type {type_name(current)} "
            f"in document {_where(document)}"
        )
    if not (isinstance(value, Mapping) and "$each" in value):
        current.append(copy_value(value))
        return
    items = [copy_value(v) for v in value["$each"]]
    position = value.get("$position", MISSING)
    if position is MISSING:
        current.extend(items)
    else:
        at_or_none = whole_number(position)
        if at_or_none is None:
            raise bad_value(f"The value for $position must be an integer value, not of type: {type_name(position)}")
        at = at_or_none
        if at < 0:
            at = max(len(current) + at, 0)
        current[at:at] = items
    if "$sort" in value:
        _sort_array(current, value["$sort"], collation)
    if "$slice" in value:
        count = value["$slice"]
        n_or_none = whole_number(count)
        if n_or_none is None:
            raise bad_value(f"The value for $slice must be an integer value but was given type: {type_name(count)}")
        n = n_or_none
        current[:] = current[:n] if n >= 0 else current[n:]


def _sort_array(array: list[Any], spec: Any, collation: Collation | None) -> None:
    invalid = bad_value(
        "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields"
    )
    if is_number(spec):
        if numeric_value(spec) not in (1, -1):
            raise invalid
        array.sort(key=sort_key_for(collation), reverse=numeric_value(spec) == -1)
        return
    if not isinstance(spec, Mapping) or not spec:
        raise invalid
    for direction in spec.values():
        if not is_number(direction) or numeric_value(direction) not in (1, -1):
            raise invalid
    # a stable sort per key, least significant first
    for field, direction in reversed(list(spec.items())):
        array.sort(key=_field_sort_key(split_path(field), collation), reverse=numeric_value(direction) == -1)


def _field_sort_key(parts: list[str], collation: Collation | None) -> Callable[[Any], Any]:
    key = sort_key_for(collation)
    return lambda element: key(get_path(element, parts) if isinstance(element, Mapping) else MISSING)


def upsert_seed(filter: Mapping[str, Any] | None) -> dict[str, Any]:  # noqa: A002
    """The document an upsert starts from: the filter's equality conditions (including those
    inside $and and $eq), with dotted paths made into nested documents."""
    seed: dict[str, Any] = {}
    _collect_equalities(filter or {}, seed)
    return seed


def _collect_equalities(filter: Mapping[str, Any], seed: dict[str, Any]) -> None:  # noqa: A002
    for key, value in filter.items():
        if key == "$and" and isinstance(value, list):
            for clause in value:
                if isinstance(clause, Mapping):
                    _collect_equalities(clause, seed)
            continue
        if key.startswith("$"):
            continue
        if is_operator_document(value):
            if "$eq" not in value:
                continue
            value = value["$eq"]
        elif isinstance(value, Regex | re.Pattern):
            continue
        parts = split_path(key)
        existing = get_path(seed, parts)
        if existing is not MISSING:
            raise CommandError(
                54, "NotSingleValueField",
                f"cannot infer query fields to set, path '{key}' is matched twice",
            )
        try:
            set_path(seed, parts, copy_value(value))
        except CommandError:
            raise CommandError(
                54, "NotSingleValueField",
                f"cannot infer query fields to set, path '{key}' is matched twice",
            ) from None
