extension BTree {
    /// The value stored for `key`, or `nil` if the tree does not contain `key`.
    ///
    /// - Complexity: O(log n)
    @inlinable
    public func value(forKey key: Key) -> Value? {
        var node = _root
        while !node._isLeaf {
            node = node._children[node._upperBound(key)]
        }
        let slot = node._lowerBound(key)
        if slot < node._keys.count && node._keys[slot] == key {
            return node._values[slot]
        }
        return nil
    }

    /// Whether the tree contains `key`.
    ///
    /// - Complexity: O(log n)
    @inlinable
    public func contains(key: Key) -> Bool {
        var node = _root
        while !node._isLeaf {
            node = node._children[node._upperBound(key)]
        }
        let slot = node._lowerBound(key)
        return slot < node._keys.count && node._keys[slot] == key
    }
}
