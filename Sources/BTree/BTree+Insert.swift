extension BTree {
    /// Stores `value` for `key`, replacing any existing value.
    ///
    /// - Returns: The value previously stored for `key`, or `nil` if `key` was not present.
    /// - Complexity: O(log n) comparisons, O(fanout · log n) element moves.
    @inlinable
    @discardableResult
    public mutating func updateValue(_ value: Value, forKey key: Key) -> Value? {
        let old = _insert(value, forKey: key, replacing: true)
        _debugCheckInvariants()
        return old
    }

    /// Stores `value` for `key` only if `key` is not present yet.
    ///
    /// - Returns: `inserted` is `true` if the element was added; `existing` is the
    ///   value already stored for `key` when `inserted` is `false`.
    /// - Complexity: O(log n) comparisons, O(fanout · log n) element moves.
    @inlinable
    @discardableResult
    public mutating func insert(_ value: Value, forKey key: Key) -> (inserted: Bool, existing: Value?) {
        if let existing = self.value(forKey: key) {
            return (false, existing)
        }
        _ = _insert(value, forKey: key, replacing: false)
        _debugCheckInvariants()
        return (true, nil)
    }

    /// Accesses the value for `key`; assigning `nil` removes the key.
    ///
    /// - Complexity: O(log n)
    @inlinable
    public subscript(key: Key) -> Value? {
        get { value(forKey: key) }
        set {
            if let newValue {
                updateValue(newValue, forKey: key)
            } else {
                removeValue(forKey: key)
            }
        }
    }

    @inlinable
    internal mutating func _insert(_ value: Value, forKey key: Key, replacing: Bool) -> Value? {
        _makeRootUnique()
        var old: Value? = nil
        if let split = _root._insert(value, forKey: key, replacing: replacing, fanout: _fanout, old: &old) {
            _root = _Node(separators: [split.separator], children: [_root, split.right], capacity: _fanout)
        }
        if old == nil {
            _count += 1
        }
        return old
    }
}

extension BTree._Node {
    /// Inserts into the subtree rooted at this (uniquely referenced) node.
    ///
    /// - Returns: A split to propagate to the parent if this node overflowed.
    @inlinable
    internal func _insert(
        _ value: Value, forKey key: Key, replacing: Bool, fanout: Int, old: inout Value?
    ) -> BTree._Split? {
        if _isLeaf {
            let slot = _lowerBound(key)
            if slot < _keys.count && _keys[slot] == key {
                old = _values[slot]
                if replacing {
                    _values[slot] = value
                }
                return nil
            }
            _keys.insert(key, at: slot)
            _values.insert(value, at: slot)
            return _keys.count > fanout ? _splitLeaf(fanout: fanout) : nil
        }
        let slot = _upperBound(key)
        _makeChildUnique(slot)
        guard
            let split = _children[slot]._insert(
                value, forKey: key, replacing: replacing, fanout: fanout, old: &old)
        else {
            return nil
        }
        _keys.insert(split.separator, at: slot)
        _children.insert(split.right, at: slot + 1)
        return _children.count > fanout ? _splitInternal(fanout: fanout) : nil
    }

    /// Moves the upper half of an overfull leaf into a new right sibling.
    @inlinable
    internal func _splitLeaf(fanout: Int) -> BTree._Split {
        let mid = _keys.count / 2
        let right = BTree._Node(
            leafKeys: Array(_keys[mid...]), values: Array(_values[mid...]), capacity: fanout)
        _keys.removeSubrange(mid...)
        _values.removeSubrange(mid...)
        return BTree._Split(separator: right._keys[0], right: right)
    }

    /// Moves the upper half of an overfull internal node into a new right sibling;
    /// the middle separator moves up to the parent.
    @inlinable
    internal func _splitInternal(fanout: Int) -> BTree._Split {
        let leftChildren = _children.count / 2
        let separator = _keys[leftChildren - 1]
        let right = BTree._Node(
            separators: Array(_keys[leftChildren...]),
            children: Array(_children[leftChildren...]),
            capacity: fanout)
        _keys.removeSubrange((leftChildren - 1)...)
        _children.removeSubrange(leftChildren...)
        return BTree._Split(separator: separator, right: right)
    }
}
