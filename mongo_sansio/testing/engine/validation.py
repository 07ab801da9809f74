"""Document validation: a collection's ``validator``, ``validationLevel`` and ``validationAction``.

Inputs: the options of ``create`` and ``collMod`` (:func:`validation_options`), then, for each
document a write is about to store, the document before (None for an insert or an upsert) and
after (:meth:`Validation.check`).  Outputs: the options as listCollections shows them
(:meth:`Validation.listed`), and mongod's DocumentValidationFailure (121, "Document failed
validation") with ``errInfo: {failingDocumentId, details}`` when a write must be refused.

A validator is a query filter (the engine's matcher, ``$expr`` and ``$jsonSchema`` included)
parsed as mongod parses one: ``$where``, ``$text`` and the ``$near`` family are refused with
BadValue (2), unknown operators as in any query.  ``validationLevel`` "strict" (the default)
checks every insert and update, "moderate" does not check an update of a document that was
already invalid, "off" checks nothing; ``validationAction`` "error" (the default) refuses the
write, "warn" lets it through (mongod logs "Document would fail validation"; the simulator
counts it in :attr:`Validation.warnings`).  A command's ``bypassDocumentValidation: true`` skips
all of it; the caller passes that along to the collection.

``details`` follows mongod 5.0+: one failing clause is described by ``operatorName``,
``specifiedAs``, ``reason`` and ``consideredValue`` (or ``consideredValues`` when the path
reached an array or several values); several top-level clauses by ``$and`` with
``clausesNotSatisfied: [{index, details}]``; ``$or`` and ``$nor`` alike; ``$expr`` by its
``expressionResult``; ``$jsonSchema`` by ``schemaRulesNotSatisfied`` (:mod:`.json_schema`).
Less common operators ($elemMatch, $all, $mod, $size, $not, bit tests, geo) are described
with a generic reason: an approximation of mongod's wording, not a copy of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.testing.engine.errors import CommandError, bad_value, type_mismatch
from mongo_sansio.testing.engine.order import MISSING, copy_value, type_name
from mongo_sansio.testing.engine.paths import lookup_leaves, split_path
from mongo_sansio.testing.engine.query import Predicate, compile_filter, is_operator_document

__all__ = ["LEVELS", "ACTIONS", "Validation", "document_validation_failure", "explain", "validation_options"]

LEVELS = ("off", "strict", "moderate")
ACTIONS = ("error", "warn")
# Operators mongod refuses inside a validator, and what it says.
_REFUSED_TOP = {"$where": "$where is not allowed in this context", "$text": "$text is not allowed in this context"}
_NEAR = frozenset({"$near", "$nearSphere", "$geoNear"})
_NEAR_REFUSED = "$geoNear, $near, and $nearSphere are not allowed in this context"
_INTERNAL_DATABASES = ("admin", "local", "config")

_REASONS = {
    "$eq": "comparison failed", "$lt": "comparison failed", "$lte": "comparison failed",
    "$gt": "comparison failed", "$gte": "comparison failed", "$ne": "comparison succeeded",
    "$in": "no matching value found in array", "$nin": "matching value found in array",
    "$type": "type did not match", "$regex": "regular expression did not match",
    "$size": "array length was not equal to given size",
    "$all": "array did not contain all specified values",
    "$elemMatch": "array did not satisfy the child predicate",
    "$mod": "$mod did not evaluate to expected remainder",
}
# Operators a missing field can fail without "field was missing" being the reason.
_MISSING_MATCHES = frozenset({"$ne", "$nin", "$not", "$exists"})


class Validation:
    """A collection's validation options, the validator compiled once."""

    def __init__(self, validator: Mapping[str, Any], level: str | None = None, action: str | None = None) -> None:
        self.validator: dict[str, Any] = copy_value(dict(validator))
        self.level = level
        self.action = action
        self._predicate: Predicate = compile_filter(self.validator)
        # writes that would have failed with validationAction "warn" (mongod logs each one)
        self.warnings = 0

    def listed(self) -> dict[str, Any]:
        """The options listCollections shows: those that were set (an empty validator is not)."""
        shown: dict[str, Any] = {}
        if self.validator:
            shown["validator"] = copy_value(self.validator)
        if self.level is not None:
            shown["validationLevel"] = self.level
        if self.action is not None:
            shown["validationAction"] = self.action
        return shown

    def check(self, before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> None:
        """Raise DocumentValidationFailure if storing ``after`` (in place of ``before``, None
        for a new document) must be refused."""
        level = self.level or "strict"
        if not self.validator or level == "off":
            return
        if level == "moderate" and before is not None and not self._predicate(before):
            return  # (an update of a document that was already invalid)
        if self._predicate(after):
            return
        if self.action == "warn":
            self.warnings += 1
            return
        raise document_validation_failure(self.validator, after)


def document_validation_failure(validator: Mapping[str, Any], document: Mapping[str, Any]) -> CommandError:
    """mongod's error for ``document`` failing ``validator``."""
    info = {"failingDocumentId": copy_value(document.get("_id")), "details": explain(validator, document)}
    return CommandError(121, "DocumentValidationFailure", "Document failed validation", errInfo=info)


def validation_options(
    body: Mapping[str, Any], command: str, database: str, current: Validation | None = None,
) -> Validation | None:
    """The validation ``body`` (a create or collMod) asks for, over ``current``; None when
    neither sets anything."""
    fields = ("validator", "validationLevel", "validationAction")
    if not any(field in body for field in fields):
        return current
    validator = body.get("validator", current.validator if current is not None else {})
    if not isinstance(validator, Mapping):
        raise type_mismatch(f"BSON field '{command}.validator' is the wrong type '{type_name(validator)}', "
                            "expected type 'object'")
    level = _choice(body, command, "validationLevel", LEVELS, current.level if current is not None else None)
    action = _choice(body, command, "validationAction", ACTIONS, current.action if current is not None else None)
    if validator and database in _INTERNAL_DATABASES:
        raise CommandError(72, "InvalidOptions",
                           f"Document validators are not allowed on collections in the {database} internal database")
    _refuse_in_validator(validator)
    return Validation(validator, level, action)


def _choice(body: Mapping[str, Any], command: str, field: str, allowed: tuple[str, ...], current: str | None) -> str | None:
    if field not in body:
        return current
    value = body[field]
    if not isinstance(value, str):
        raise type_mismatch(f"BSON field '{command}.{field}' is the wrong type '{type_name(value)}', expected type 'string'")
    if value not in allowed:
        raise bad_value(f"Enumeration value '{value}' for field '{command}.{field}' is not a valid value.")
    return value


def _refuse_in_validator(filter: Mapping[str, Any]) -> None:  # noqa: A002
    """mongod parses validators without $where, $text and $near: refuse them wherever they are."""
    for key, value in filter.items():
        if key in _REFUSED_TOP:
            raise bad_value(_REFUSED_TOP[key])
        if key in ("$and", "$or", "$nor") and isinstance(value, list):
            for clause in value:
                if isinstance(clause, Mapping):
                    _refuse_in_validator(clause)
        elif not key.startswith("$") and isinstance(value, Mapping):
            _refuse_in_condition(value)


def _refuse_in_condition(condition: Mapping[str, Any]) -> None:
    for operator, argument in condition.items():
        if operator in _NEAR:
            raise bad_value(_NEAR_REFUSED)
        if operator == "$elemMatch" and isinstance(argument, Mapping):
            if is_operator_document(argument):
                _refuse_in_condition(argument)
            else:
                _refuse_in_validator(argument)
        elif operator == "$not" and isinstance(argument, Mapping):
            _refuse_in_condition(argument)


# --- errInfo.details ----------------------------------------------------------------------------


def explain(filter: Mapping[str, Any], document: Mapping[str, Any]) -> dict[str, Any]:  # noqa: A002
    """Why ``document`` fails ``filter``: mongod's ``errInfo.details``."""
    clauses = _clauses(filter)
    if len(clauses) == 1:
        return _explain_clause(clauses[0], document)
    failing = [
        {"index": index, "details": _explain_clause(clause, document)}
        for index, clause in enumerate(clauses)
        if not compile_filter(clause)(document)
    ]
    return {"operatorName": "$and", "clausesNotSatisfied": failing}


def _clauses(filter: Mapping[str, Any]) -> list[dict[str, Any]]:  # noqa: A002
    """The filter's top-level conditions, one per operator: ``{a: {$gt: 1, $lt: 5}}`` is two
    (a ``$regex`` keeps its ``$options``)."""
    clauses: list[dict[str, Any]] = []
    for key, value in filter.items():
        if key == "$comment":
            continue
        if key.startswith("$") or not is_operator_document(value):
            clauses.append({key: value})
            continue
        for operator, argument in value.items():
            if operator == "$options":
                continue
            condition = {operator: argument}
            if operator == "$regex" and "$options" in value:
                condition["$options"] = value["$options"]
            clauses.append({key: condition})
    return clauses


def _explain_clause(clause: dict[str, Any], document: Mapping[str, Any]) -> dict[str, Any]:
    ((key, value),) = clause.items()
    if key in ("$and", "$or", "$nor"):
        nor = key == "$nor"
        failing = [
            {"index": index, "details": _explain_satisfied(sub, document) if nor else explain(sub, document)}
            for index, sub in enumerate(value)
            if compile_filter(sub)(document) == nor
        ]
        return {"operatorName": key, "clausesNotSatisfied": failing}
    if key == "$expr":
        from mongo_sansio.testing.engine.expressions import evaluate

        return {"operatorName": "$expr", "specifiedAs": copy_value(clause), "reason": "expression did not match",
                "expressionResult": copy_value(evaluate(value, document))}
    if key == "$jsonSchema":
        from mongo_sansio.testing.engine.json_schema import compile_schema

        return {"operatorName": "$jsonSchema", "schemaRulesNotSatisfied": compile_schema(value).failures(document)}
    if key in ("$alwaysFalse", "$alwaysTrue"):
        return {"operatorName": key, "specifiedAs": copy_value(clause), "reason": "expression always evaluates to false"}
    operator = next(iter(value)) if is_operator_document(value) else "$eq"
    return _explain_leaf(key, operator, value, clause, document)


def _explain_satisfied(filter: Mapping[str, Any], document: Mapping[str, Any]) -> dict[str, Any]:  # noqa: A002
    """A clause of a ``$nor`` that matched (an approximation of mongod's inverted details)."""
    return {"operatorName": "$and" if len(filter) != 1 else next(iter(filter)), "specifiedAs": copy_value(dict(filter)),
            "reason": "expression matched"}


def _explain_leaf(path: str, operator: str, condition: Any, clause: dict[str, Any],
                  document: Mapping[str, Any]) -> dict[str, Any]:
    values = lookup_leaves(document, split_path(path))
    details: dict[str, Any] = {"operatorName": operator, "specifiedAs": copy_value(clause)}
    if operator == "$exists":
        details["reason"] = "path does not exist" if not values else "path does exist"
        if values:
            _considered(details, values)
        return details
    if not values and operator not in _MISSING_MATCHES:
        details["reason"] = "field was missing"
        return details
    details["reason"] = _REASONS.get(operator, "expression did not match")
    if values:
        _considered(details, values)
        if operator == "$type":
            many = "consideredValues" in details
            types = sorted({type_name(v) for v in _flattened(values)} | ({"array"} if many else set()))
            if many:
                details["consideredTypes"] = types
            else:
                details["consideredType"] = type_name(values[0])
    return details


def _flattened(values: list[Any]) -> list[Any]:
    flat: list[Any] = []
    for value in values:
        flat.extend(value if isinstance(value, list) else [value])
    return flat


def _considered(details: dict[str, Any], values: list[Any]) -> None:
    """One value reached is ``consideredValue``; an array or several are ``consideredValues``."""
    if len(values) == 1 and not isinstance(values[0], list) and values[0] is not MISSING:
        details["consideredValue"] = copy_value(values[0])
    else:
        details["consideredValues"] = copy_value(_flattened(values))
