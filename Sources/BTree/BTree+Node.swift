extension BTree {
    /// A B+tree node. Leaves store keys and values; internal nodes store
    /// separator keys and children, with `children.count == keys.count + 1`.
    ///
    /// Separator rule: every key in `children[i]` is `>= keys[i - 1]` (if it
    /// exists) and `< keys[i]` (if it exists).
    ///
    /// The stored arrays are marked `@exclusivity(unchecked)`: dynamic
    /// exclusivity enforcement on class properties slowed the hot paths markedly
    /// (see `Benchmarks/RESULTS.md`, "Measurements behind the code"). It is sound
    /// here because node storage is private to this module, every access is a
    /// short, non-nested read or modify of one node's own array, and nodes
    /// reachable from more than one tree value are never mutated (copy-on-write).
    @usableFromInline
    internal final class _Node {
        @usableFromInline
        @exclusivity(unchecked)
        internal var _keys: [Key]

        /// Values parallel to `_keys`; empty for internal nodes.
        @usableFromInline
        @exclusivity(unchecked)
        internal var _values: [Value]

        /// Children; empty for leaves.
        @usableFromInline
        @exclusivity(unchecked)
        internal var _children: [_Node]

        @usableFromInline
        internal let _isLeaf: Bool

        /// Creates an empty leaf with room for `capacity + 1` elements (one extra
        /// for the transient overflow before a split).
        @inlinable
        internal init(leafCapacity capacity: Int) {
            _keys = []
            _values = []
            _children = []
            _isLeaf = true
            _keys.reserveCapacity(capacity + 1)
            _values.reserveCapacity(capacity + 1)
        }

        @inlinable
        internal init(leafKeys keys: [Key], values: [Value], capacity: Int) {
            _keys = keys
            _values = values
            _children = []
            _isLeaf = true
            _keys.reserveCapacity(capacity + 1)
            _values.reserveCapacity(capacity + 1)
        }

        @inlinable
        internal init(separators keys: [Key], children: [_Node], capacity: Int) {
            _keys = keys
            _values = []
            _children = children
            _isLeaf = false
            _keys.reserveCapacity(capacity)
            _children.reserveCapacity(capacity + 1)
        }

        /// A shallow copy: the arrays are copied, the children are shared.
        @inlinable
        internal func _copy() -> _Node {
            let capacity = Swift.max(_keys.capacity, _children.capacity)
            if _isLeaf {
                return _Node(leafKeys: _keys, values: _values, capacity: capacity)
            }
            return _Node(separators: _keys, children: _children, capacity: capacity)
        }

        /// Copies `_children[slot]` if it is shared with another tree.
        @inlinable
        internal func _makeChildUnique(_ slot: Int) {
            if !isKnownUniquelyReferenced(&_children[slot]) {
                _children[slot] = _children[slot]._copy()
            }
        }

        /// The first slot whose key is `>= key` (`_keys.count` if none).
        @inlinable
        internal func _lowerBound(_ key: Key) -> Int {
            return _keys.withUnsafeBufferPointer { keys in
                // Keys are read where they lie (`pointee` is an address), so that a
                // comparison inlined here need not copy them.
                guard let base = keys.baseAddress else { return 0 }
                var low = 0
                var high = keys.count
                while low < high {
                    let mid = low &+ (high &- low) >> 1
                    if (base + mid).pointee < key {
                        low = mid &+ 1
                    } else {
                        high = mid
                    }
                }
                return low
            }
        }

        /// The first slot whose key is `> key` (`_keys.count` if none). For an
        /// internal node this is the child that may contain `key`.
        @inlinable
        internal func _upperBound(_ key: Key) -> Int {
            return _keys.withUnsafeBufferPointer { keys in
                guard let base = keys.baseAddress else { return 0 }
                var low = 0
                var high = keys.count
                while low < high {
                    let mid = low &+ (high &- low) >> 1
                    if key < (base + mid).pointee {
                        high = mid
                    } else {
                        low = mid &+ 1
                    }
                }
                return low
            }
        }

        /// Whether this non-root node has fewer entries than the minimum.
        @inlinable
        internal func _isUnderfull(fanout: Int) -> Bool {
            if _isLeaf {
                return _keys.count < fanout / 2
            }
            return _children.count < (fanout + 1) / 2
        }

        /// Whether this node can give one entry to a sibling and stay at or above the minimum.
        @inlinable
        internal func _canLend(fanout: Int) -> Bool {
            if _isLeaf {
                return _keys.count > fanout / 2
            }
            return _children.count > (fanout + 1) / 2
        }
    }

    /// The result of splitting an overfull node: the separator to insert into the
    /// parent and the new right sibling.
    @usableFromInline
    internal struct _Split {
        @usableFromInline
        internal var separator: Key
        @usableFromInline
        internal var right: _Node

        @inlinable
        internal init(separator: Key, right: _Node) {
            self.separator = separator
            self.right = right
        }
    }
}
