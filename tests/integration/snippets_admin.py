"""Snippets of everyday PyMongo code, part three: collections and databases, the client's own
methods and properties, write concerns and read preferences, sessions and transactions, change
streams, and PyMongo's error cases (calling a collection, ``bool()``, bad names, a closed
client).  Run by test_pymongo_snippets.py."""

from __future__ import annotations

from typing import Any

from snippet_harness import DB, applied, seeded, snippet

# --- collections and databases -------------------------------------------------------------------


@snippet
def create_collection_and_again(client: Any, ns: Any) -> Any:
    db = client[DB]
    coll = db.create_collection("made")
    try:
        db.create_collection("made")
    except ns.CollectionInvalid as exc:
        again = (type(exc).__name__, str(exc))
    return coll.name, coll.full_name, again, db.list_collection_names()


@snippet
def collection_invalid_is_in_errors(client: Any, ns: Any) -> Any:
    return ns.errors.CollectionInvalid is ns.CollectionInvalid, issubclass(
        ns.CollectionInvalid, ns.errors.PyMongoError
    )


@snippet
def list_collection_names_and_list_collections(client: Any, ns: Any) -> Any:
    db = client[DB]
    db.b.insert_one({})
    db.a.insert_one({})
    db.create_collection("capped", capped=True, size=4096)
    listed = sorted(
        (c["name"], c["type"], c.get("options", {}).get("capped", False))
        for c in db.list_collections()
    )
    filtered = db.list_collection_names(filter={"name": {"$regex": "^c"}})
    return sorted(db.list_collection_names()), listed, filtered


@snippet
def collection_options(client: Any, ns: Any) -> Any:
    db = client[DB]
    db.create_collection("capped", capped=True, size=4096, max=10)
    return db.capped.options(), db.missing.options()


@snippet
def drop_collection_and_drop(client: Any, ns: Any) -> Any:
    db = client[DB]
    db.a.insert_one({})
    db.b.insert_one({})
    db.c.insert_one({})
    first = db.drop_collection("a")
    db.b.drop()
    db.drop_collection(db.c)
    return sorted(first), db.list_collection_names(), sorted(db.drop_collection("never"))


@snippet
def rename_a_collection(client: Any, ns: Any) -> Any:
    db = client[DB]
    seeded(client, 2, "old")
    db.taken.insert_one({})
    db.old.rename("new")
    try:
        db.new.rename("taken")
    except ns.errors.OperationFailure as exc:
        clash = exc.code
    db.new.rename("taken", dropTarget=True)
    return sorted(db.list_collection_names()), clash, db.taken.count_documents({})


@snippet
def validator_refuses_a_document(client: Any, ns: Any) -> Any:
    db = client[DB]
    db.create_collection("checked", validator={"name": {"$exists": True}})
    try:
        db.checked.insert_one({"_id": 1, "other": 1})
    except ns.errors.WriteError as exc:
        return (
            type(exc).__name__,
            exc.code,
            db.checked.insert_one({"_id": 2, "name": "ok"}).inserted_id,
        )
    return "not raised"


@snippet
def drop_database_by_name_and_by_object(client: Any, ns: Any) -> Any:
    client[DB].a.insert_one({})
    client["snippets_other"].a.insert_one({})
    before = {DB, "snippets_other"} <= set(client.list_database_names())
    client.drop_database(DB)
    client.drop_database(client["snippets_other"])
    after = set(client.list_database_names()) & {DB, "snippets_other"}
    return before, after


@snippet
def list_databases_entries(client: Any, ns: Any) -> Any:
    client[DB].a.insert_one({})
    entry = next(d for d in client.list_databases() if d["name"] == DB)
    return sorted(entry), entry["empty"], "admin" in client.list_database_names()


@snippet
def names_and_navigation(client: Any, ns: Any) -> Any:
    db = client.get_database(DB)
    coll = db.get_collection("a.b")
    return (
        db.name,
        coll.name,
        coll.full_name,
        coll.database.name,
        db["a"]["b"] == coll,
        db.a.b == coll,
        coll.database == db,
        db.client is client,
        client[DB] == db,
    )


@snippet
def invalid_collection_names(client: Any, ns: Any) -> Any:
    outcomes = []
    for name in ("", "a$b", ".a", "a.", "system..x"):
        try:
            client[DB][name]
            outcomes.append("accepted")
        except ns.errors.InvalidName:
            outcomes.append("InvalidName")
        except TypeError:
            outcomes.append("TypeError")
    return outcomes


@snippet
def invalid_database_names(client: Any, ns: Any) -> Any:
    outcomes = []
    for name in ("", "a b", "a.b", "a/b", "a$b"):
        try:
            client[name]
            outcomes.append("accepted")
        except ns.errors.InvalidName:
            outcomes.append("InvalidName")
    return outcomes


@snippet
def collection_name_of_the_wrong_type(client: Any, ns: Any) -> Any:
    try:
        client[DB].get_collection(5)
    except TypeError as exc:
        return str(exc)
    return "not raised"


# --- commands and the client ---------------------------------------------------------------------


@snippet
def command_ping_and_buildinfo(client: Any, ns: Any) -> Any:
    ping = client.admin.command("ping")
    info = client.admin.command("buildinfo")
    also = client.admin.command({"buildInfo": 1})
    return ping, isinstance(info["version"], str), info["version"] == also["version"], info["ok"]


@snippet
def command_with_a_value_and_keywords(client: Any, ns: Any) -> Any:
    db = client[DB]
    seeded(client, 4)
    counted = db.command("count", "things", query={"tag": "even"})
    listed = db.command("listCollections", nameOnly=True)
    return counted["n"], [c["name"] for c in listed["cursor"]["firstBatch"]]


@snippet
def unknown_command(client: Any, ns: Any) -> Any:
    try:
        client.admin.command("noSuchCommand")
    except ns.errors.OperationFailure as exc:
        return type(exc).__name__, exc.code, exc.details["ok"]
    return "not raised"


@snippet
def server_info_keys(client: Any, ns: Any) -> Any:
    info = client.server_info()
    return isinstance(info["version"], str), isinstance(info["versionArray"], list), info["ok"]


@snippet
def client_address_primary_and_nodes(client: Any, ns: Any) -> Any:
    client.admin.command("ping")
    return (
        client.address == client.primary,
        client.primary in client.nodes,
        client.is_primary,
        client.is_mongos,
        isinstance(client.address, tuple),
    )


@snippet
def client_getattr_and_getitem(client: Any, ns: Any) -> Any:
    return (
        client.snippets == client[DB],
        client.snippets.name,
        isinstance(client.snippets, type(client[DB])),
    )


@snippet
def closed_client_refuses_work(client: Any, ns: Any) -> Any:
    other = ns.MongoClient(
        client.address[0], client.address[1], serverSelectionTimeoutMS=3000, directConnection=True
    )
    other.admin.command("ping")
    other.close()
    try:
        other[DB].things.insert_one({})
    except ns.errors.InvalidOperation as exc:
        return type(exc).__name__, str(exc)
    return "not raised"


# --- write concern, read preference, codec options -----------------------------------------------


@snippet
def unacknowledged_writes(client: Any, ns: Any) -> Any:
    coll = client[DB].get_collection("things").with_options(write_concern=ns.WriteConcern(w=0))
    inserted = coll.insert_one({"_id": 1})
    updated = coll.update_one({"_id": 1}, {"$set": {"x": 1}})
    deleted = coll.delete_many({"_id": 2})
    applied(client, {"_id": 1, "x": 1})
    return inserted, updated, deleted, coll.write_concern.acknowledged, coll.write_concern.document


@snippet
def write_concern_majority(client: Any, ns: Any) -> Any:
    coll = client[DB].things.with_options(
        write_concern=ns.WriteConcern(w="majority", wtimeout=1000)
    )
    result = coll.insert_one({"_id": 1})
    # the document's key order differs (PyMongo puts w last) and means nothing to a server
    return result, sorted(coll.write_concern.document.items()), coll.write_concern.acknowledged


@snippet
def write_concern_too_many_members(client: Any, ns: Any) -> Any:
    coll = client[DB].things.with_options(write_concern=ns.WriteConcern(w=10, wtimeout=100))
    try:
        coll.insert_one({"_id": 1})
    except ns.errors.WriteConcernError as exc:
        return type(exc).__name__, exc.code, client[DB].things.count_documents({})
    return "not raised"


@snippet
def read_preference_and_concern_of_a_collection(client: Any, ns: Any) -> Any:
    coll = client[DB].things.with_options(
        read_preference=ns.ReadPreference.SECONDARY_PREFERRED,
        read_concern=ns.ReadConcern("majority"),
    )
    seeded(client, 2)
    found = coll.count_documents({}) >= 0
    preference = coll.read_preference
    return (
        preference.name,
        preference.document,
        coll.read_concern.level,
        client[DB].things.read_preference.name,
        found,
    )


@snippet
def default_codec_options(client: Any, ns: Any) -> Any:
    opts = client[DB].things.codec_options
    return (
        opts.document_class.__name__,
        opts.tz_aware,
        opts.tzinfo,
        opts.unicode_decode_error_handler,
    )


# --- sessions and transactions -------------------------------------------------------------------


@snippet
def causal_session_reads_its_writes(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    with client.start_session(causal_consistency=True) as session:
        coll.insert_one({"_id": 1}, session=session)
        secondary = coll.with_options(read_preference=ns.ReadPreference.SECONDARY)
        found = secondary.find_one({"_id": 1}, session=session)
        return (
            found,
            session.operation_time is not None,
            session.cluster_time is not None,
            session.has_ended,
        )


@snippet
def session_ended_state(client: Any, ns: Any) -> Any:
    session = client.start_session()
    session.end_session()
    try:
        client[DB].things.insert_one({}, session=session)
    except ns.errors.InvalidOperation as exc:
        return session.has_ended, str(exc)
    return "not raised"


@snippet
def with_transaction_returns_the_callback_value(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 0})

    def transfer(session: Any) -> Any:
        coll.insert_one({"_id": 1}, session=session)
        coll.update_one({"_id": 0}, {"$set": {"moved": True}}, session=session)
        return "done"

    with client.start_session() as session:
        value = session.with_transaction(transfer)
    return value, list(coll.find().sort("_id"))


@snippet
def start_transaction_context_commits(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 0})
    with client.start_session() as session:
        with session.start_transaction():
            coll.insert_one({"_id": 1}, session=session)
            inside = coll.count_documents({}, session=session)
            outside = coll.count_documents({})
            in_transaction = session.in_transaction
        return inside, outside, in_transaction, session.in_transaction, coll.count_documents({})


@snippet
def aborted_transaction_is_invisible(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 0})
    with client.start_session() as session:
        session.start_transaction()
        coll.insert_one({"_id": 1}, session=session)
        coll.delete_one({"_id": 0}, session=session)
        session.abort_transaction()
    return list(coll.find())


@snippet
def exception_in_a_transaction_block_aborts(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 0})
    with client.start_session() as session:
        try:
            with session.start_transaction():
                coll.insert_one({"_id": 1}, session=session)
                raise KeyError("stop")
        except KeyError:
            pass
        return session.in_transaction, list(coll.find())


@snippet
def transaction_state_errors(client: Any, ns: Any) -> Any:
    errors = []
    with client.start_session() as session:
        for action in (session.commit_transaction, session.abort_transaction):
            try:
                action()
            except ns.errors.InvalidOperation as exc:
                errors.append(str(exc))
        session.start_transaction()
        try:
            session.start_transaction()
        except ns.errors.InvalidOperation as exc:
            errors.append(str(exc))
        session.abort_transaction()
    return errors


@snippet
def duplicate_key_in_a_transaction(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 1})
    with client.start_session() as session:
        session.start_transaction()
        try:
            coll.insert_one({"_id": 1}, session=session)
        except ns.errors.DuplicateKeyError as exc:
            labels = sorted(exc.details.get("errorLabels", []))
        session.abort_transaction()
    return labels, coll.count_documents({})


# --- change streams ------------------------------------------------------------------------------


@snippet
def watch_an_insert(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 0})
    with coll.watch() as stream:
        coll.insert_one({"_id": 1, "x": "new"})
        change = next(stream)
    return (
        change["operationType"],
        change["fullDocument"],
        change["ns"],
        change["documentKey"],
        sorted(change),
    )


@snippet
def watch_updates_with_update_lookup(client: Any, ns: Any) -> Any:
    coll = seeded(client, 2)
    with coll.watch(
        [{"$match": {"operationType": "update"}}], full_document="updateLookup"
    ) as stream:
        coll.insert_one({"_id": 5})
        coll.update_one({"_id": 1}, {"$set": {"y": 1}})
        change = stream.next()
    return change["operationType"], change["updateDescription"], change["fullDocument"]


@snippet
def watch_a_database_and_resume_after(client: Any, ns: Any) -> Any:
    db = client[DB]
    db.create_collection("a")
    with db.watch() as stream:
        db.a.insert_one({"_id": 1})
        db.a.insert_one({"_id": 2})
        first = next(stream)
        token = stream.resume_token
    with db.watch(resume_after=token) as resumed:
        second = next(resumed)
    return first["documentKey"], second["documentKey"], second["ns"]


# --- PyMongo's Python-level protocol and error cases ---------------------------------------------


@snippet
def calling_a_collection(client: Any, ns: Any) -> Any:
    try:
        client[DB].things()
    except TypeError as exc:
        return str(exc)
    return "not raised"


@snippet
def calling_a_missing_method(client: Any, ns: Any) -> Any:
    try:
        client[DB].things.insert({"x": 1})
    except TypeError as exc:
        return str(exc)
    return "not raised"


@snippet
def bool_of_a_collection_and_a_database(client: Any, ns: Any) -> Any:
    messages = []
    for value in (client[DB].things, client[DB]):
        try:
            bool(value)
        except NotImplementedError as exc:
            messages.append(str(exc))
    return messages, client[DB].things is not None


@snippet
def iterating_a_collection(client: Any, ns: Any) -> Any:
    try:
        iter(client[DB].things)
    except TypeError as exc:
        return str(exc)
    return "not raised"


@snippet
def sub_collection_attribute(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    return coll.sub.name, coll["sub"].full_name, coll.write_concern.acknowledged
