import Foundation

/// A transaction's changes as JSON (`Formats/json.md`, "`history`"): how the JSON store's
/// history keeps them, and the PostgreSQL store's `stowage_history.changes` column
/// (`Formats/postgres.md`, "The history").
package enum HistoryJSON {
    /// Writes `changes` as an array of change objects.
    package static func write(_ changes: [HistoryEntry.Change], to w: inout JSONWriter) {
        w.beginArray()
        for change in changes {
            w.beginObject()
            w.key("entity")
            w.string(change.entity)
            w.key("id")
            w.int(change.key)
            w.key("kind")
            w.string(["insert", "update", "delete"][Int(change.kind.rawValue)])
            switch change.kind {
            case .insert: break
            case .update:
                w.key("updated")
                w.beginArray()
                for name in change.updated { w.string(name) }
                w.endArray()
            case .delete:
                w.key("tombstone")
                w.beginObject()
                for name in change.tombstone.keys.sorted(by: jsonKeyOrder) {
                    w.key(name)
                    JSONValueCodec.write(change.tombstone[name] ?? .null, to: &w)
                }
                w.endObject()
            }
            w.endObject()
        }
        w.endArray()
    }

    /// Reads an array of change objects. `typeName` gives an entity's property's type name
    /// (which reads a tombstone's value); a tombstone value of a property it does not know
    /// is left out. Errors name `context` (a transaction).
    package static func read(
        _ list: [JSONValue], context transaction: String, storeIdentifier: String,
        typeName: (_ entity: String, _ property: String) -> String?
    ) throws(JSONValueCodec.Failure) -> [HistoryEntry.Change] {
        var changes: [HistoryEntry.Change] = []
        changes.reserveCapacity(list.count)
        for item in list {
            let context = "\(transaction): a change"
            let fields = try members(item, context)
            let entityName = try string(fields["entity"], "\(context)'s entity")
            guard case .integer(let key)? = fields["id"] else {
                throw JSONValueCodec.Failure("\(context)'s id must be an integer")
            }
            let kindName = try string(fields["kind"], "\(context)'s kind")
            guard let kindIndex = ["insert", "update", "delete"].firstIndex(of: kindName),
                let kind = HistoryEntry.Change.Kind(rawValue: UInt8(kindIndex))
            else {
                throw JSONValueCodec.Failure("\(context)'s kind \"\(kindName)\" is not insert, update or delete")
            }
            var change = HistoryEntry.Change(kind: kind, entity: entityName, key: key)
            if kind == .update {
                guard case .array(let names)? = fields["updated"] else {
                    throw JSONValueCodec.Failure("\(context)'s updated must be an array of names")
                }
                for name in names { change.updated.append(try string(name, "\(context)'s updated name")) }
            }
            if kind == .delete {
                let values = try members(fields["tombstone"] ?? .null, "\(context)'s tombstone")
                for (name, value) in values {
                    guard let type = typeName(entityName, name) else { continue }
                    do {
                        change.tombstone[name] = try JSONValueCodec.readAttribute(
                            value, typeName: type, storeIdentifier: storeIdentifier)
                    } catch {
                        throw JSONValueCodec.Failure("\(context)'s tombstone value \(name) does not read: \(error)")
                    }
                }
            }
            changes.append(change)
        }
        return changes
    }

    private static func members(_ value: JSONValue, _ context: String) throws(JSONValueCodec.Failure)
        -> [String: JSONValue]
    {
        guard case .object(let list) = value else {
            throw JSONValueCodec.Failure("\(context) must be an object, found \(value.typeName)")
        }
        var result: [String: JSONValue] = [:]
        for (key, member) in list {
            guard result.updateValue(member, forKey: key) == nil else {
                throw JSONValueCodec.Failure("\(context) has the member \"\(key)\" twice")
            }
        }
        return result
    }

    private static func string(_ value: JSONValue?, _ context: String) throws(JSONValueCodec.Failure) -> String {
        guard case .string(let s)? = value else {
            throw JSONValueCodec.Failure("\(context) must be a string, found \(value?.typeName ?? "nothing")")
        }
        return s
    }
}
