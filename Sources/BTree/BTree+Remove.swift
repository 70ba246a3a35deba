extension BTree {
    /// Removes `key` and its value.
    ///
    /// - Returns: The removed value, or `nil` if `key` was not present.
    /// - Complexity: O(log n) comparisons, O(fanout · log n) element moves.
    @inlinable
    @discardableResult
    public mutating func removeValue(forKey key: Key) -> Value? {
        // Avoid copying a shared path for a key that is not there.
        if !isKnownUniquelyReferenced(&_root) && value(forKey: key) == nil {
            return nil
        }
        _makeRootUnique()
        guard let old = _root._remove(key, fanout: _fanout) else {
            return nil
        }
        _count -= 1
        if !_root._isLeaf && _root._children.count == 1 {
            _root = _root._children[0]
        }
        _debugCheckInvariants()
        return old
    }

    /// Removes and returns the element with the smallest key.
    ///
    /// - Complexity: O(log n)
    @inlinable
    @discardableResult
    public mutating func removeFirst() -> Element? {
        guard let first else { return nil }
        removeValue(forKey: first.key)
        return first
    }

    /// Removes and returns the element with the largest key.
    ///
    /// - Complexity: O(log n)
    @inlinable
    @discardableResult
    public mutating func removeLast() -> Element? {
        guard let last else { return nil }
        removeValue(forKey: last.key)
        return last
    }
}

extension BTree._Node {
    /// Removes `key` from the subtree rooted at this (uniquely referenced) node,
    /// rebalancing children that become underfull.
    @inlinable
    internal func _remove(_ key: Key, fanout: Int) -> Value? {
        if _isLeaf {
            let slot = _lowerBound(key)
            guard slot < _keys.count && _keys[slot] == key else { return nil }
            _keys.remove(at: slot)
            return _values.remove(at: slot)
        }
        let slot = _upperBound(key)
        _makeChildUnique(slot)
        guard let old = _children[slot]._remove(key, fanout: fanout) else {
            return nil
        }
        if _children[slot]._isUnderfull(fanout: fanout) {
            _rebalance(childAt: slot, fanout: fanout)
        }
        return old
    }

    /// Restores the minimum occupancy of `_children[slot]` by borrowing one entry
    /// from a sibling, or by merging with a sibling when neither can lend.
    @inlinable
    internal func _rebalance(childAt slot: Int, fanout: Int) {
        if slot > 0 && _children[slot - 1]._canLend(fanout: fanout) {
            _makeChildUnique(slot - 1)
            _borrowFromLeft(childAt: slot)
        } else if slot + 1 < _children.count && _children[slot + 1]._canLend(fanout: fanout) {
            _makeChildUnique(slot + 1)
            _borrowFromRight(childAt: slot)
        } else if slot > 0 {
            _makeChildUnique(slot - 1)
            _mergeChildren(at: slot - 1)
        } else {
            _mergeChildren(at: slot)
        }
    }

    @inlinable
    internal func _borrowFromLeft(childAt slot: Int) {
        let child = _children[slot]
        let left = _children[slot - 1]
        if child._isLeaf {
            child._keys.insert(left._keys.removeLast(), at: 0)
            child._values.insert(left._values.removeLast(), at: 0)
            _keys[slot - 1] = child._keys[0]
        } else {
            child._keys.insert(_keys[slot - 1], at: 0)
            child._children.insert(left._children.removeLast(), at: 0)
            _keys[slot - 1] = left._keys.removeLast()
        }
    }

    @inlinable
    internal func _borrowFromRight(childAt slot: Int) {
        let child = _children[slot]
        let right = _children[slot + 1]
        if child._isLeaf {
            child._keys.append(right._keys.removeFirst())
            child._values.append(right._values.removeFirst())
            _keys[slot] = right._keys[0]
        } else {
            child._keys.append(_keys[slot])
            child._children.append(right._children.removeFirst())
            _keys[slot] = right._keys.removeFirst()
        }
    }

    /// Appends `_children[slot + 1]` to `_children[slot]` (which must be uniquely
    /// referenced) and removes the right child and their separator.
    @inlinable
    internal func _mergeChildren(at slot: Int) {
        let left = _children[slot]
        let right = _children[slot + 1]
        if left._isLeaf {
            left._keys.append(contentsOf: right._keys)
            left._values.append(contentsOf: right._values)
        } else {
            left._keys.append(_keys[slot])
            left._keys.append(contentsOf: right._keys)
            left._children.append(contentsOf: right._children)
        }
        _keys.remove(at: slot)
        _children.remove(at: slot + 1)
    }
}
