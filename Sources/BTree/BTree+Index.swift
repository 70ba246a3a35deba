extension BTree {
    /// One step of a root-to-leaf path: an internal node and the child slot taken.
    @usableFromInline
    internal struct _PathEntry {
        @usableFromInline
        internal var node: _Node
        @usableFromInline
        internal var slot: Int

        @inlinable
        internal init(node: _Node, slot: Int) {
            self.node = node
            self.slot = slot
        }
    }

    /// A position in a tree: a cursor that keeps the path from the root to a leaf,
    /// so stepping forwards or backwards is amortised O(1).
    ///
    /// An index is valid only for the tree value it was obtained from, until that
    /// tree is mutated. Using a stale index is memory-safe (the index keeps its
    /// nodes alive) but yields unspecified elements or traps on a bounds check.
    public struct Index: Comparable {
        /// Internal nodes from the root down to the leaf's parent.
        @usableFromInline
        internal var _path: [_PathEntry]
        @usableFromInline
        internal var _leaf: _Node
        /// Slot within `_leaf`; equals `_leaf._keys.count` only for `endIndex`
        /// (positions are normalised so that only the last leaf can be "past its end").
        @usableFromInline
        internal var _slot: Int

        @inlinable
        internal init(path: [_PathEntry], leaf: _Node, slot: Int) {
            _path = path
            _leaf = leaf
            _slot = slot
        }

        @inlinable
        internal var _isEnd: Bool { _slot >= _leaf._keys.count }

        /// The key at this position.
        ///
        /// - Precondition: The index is not `endIndex`.
        /// - Complexity: O(1)
        @inlinable
        public var key: Key {
            precondition(!_isEnd, "endIndex has no key")
            return _leaf._keys[_slot]
        }

        /// Whether two indices denote the same position of the same tree.
        ///
        /// - Complexity: O(1)
        @inlinable
        public static func == (lhs: Index, rhs: Index) -> Bool {
            return lhs._leaf === rhs._leaf && lhs._slot == rhs._slot
        }

        /// Whether `lhs` comes before `rhs` in key order (`endIndex` is last).
        ///
        /// - Complexity: O(1)
        @inlinable
        public static func < (lhs: Index, rhs: Index) -> Bool {
            if lhs._leaf === rhs._leaf {
                return lhs._slot < rhs._slot
            }
            if lhs._isEnd { return false }
            if rhs._isEnd { return true }
            return lhs._leaf._keys[lhs._slot] < rhs._leaf._keys[rhs._slot]
        }

        /// Moves to the first slot of the next leaf, keeping the position when this
        /// is the last leaf. Returns whether it moved.
        @inlinable
        @discardableResult
        internal mutating func _moveToNextLeaf() -> Bool {
            var level = _path.count - 1
            while level >= 0 && _path[level].slot == _path[level].node._children.count - 1 {
                level -= 1
            }
            if level < 0 { return false }
            _path[level].slot += 1
            var node = _path[level].node._children[_path[level].slot]
            _path.removeSubrange((level + 1)...)
            while !node._isLeaf {
                _path.append(_PathEntry(node: node, slot: 0))
                node = node._children[0]
            }
            _leaf = node
            _slot = 0
            return true
        }

        /// Advances to the next element (or `endIndex`).
        @inlinable
        internal mutating func _formSuccessor() {
            precondition(!_isEnd, "Cannot advance past endIndex")
            _slot += 1
            if _slot == _leaf._keys.count {
                _moveToNextLeaf()
            }
        }

        /// Moves to the previous element.
        @inlinable
        internal mutating func _formPredecessor() {
            if _slot > 0 {
                _slot -= 1
                return
            }
            var level = _path.count - 1
            while level >= 0 && _path[level].slot == 0 {
                level -= 1
            }
            precondition(level >= 0, "Cannot move before startIndex")
            _path[level].slot -= 1
            var node = _path[level].node._children[_path[level].slot]
            _path.removeSubrange((level + 1)...)
            while !node._isLeaf {
                let last = node._children.count - 1
                _path.append(_PathEntry(node: node, slot: last))
                node = node._children[last]
            }
            _leaf = node
            _slot = node._keys.count - 1
        }
    }

    /// Descends from the root to the leaf chosen by `choose` (which returns a
    /// child slot for an internal node), then places the cursor at the slot
    /// returned by `slotInLeaf`, normalising "past the end of a leaf" to the
    /// start of the next leaf.
    @inlinable
    internal func _descend(
        child choose: (_Node) -> Int, slotInLeaf: (_Node) -> Int
    ) -> Index {
        var path: [_PathEntry] = []
        var node = _root
        while !node._isLeaf {
            let slot = choose(node)
            path.append(_PathEntry(node: node, slot: slot))
            node = node._children[slot]
        }
        var index = Index(path: path, leaf: node, slot: slotInLeaf(node))
        if index._isEnd {
            index._moveToNextLeaf()
        }
        return index
    }

    /// The position of the first element whose key is `>= key`, or `endIndex`.
    ///
    /// - Complexity: O(log n)
    @inlinable
    public func lowerBound(_ key: Key) -> Index {
        return _descend(child: { $0._upperBound(key) }, slotInLeaf: { $0._lowerBound(key) })
    }

    /// The position of the first element whose key is `> key`, or `endIndex`.
    ///
    /// - Complexity: O(log n)
    @inlinable
    public func upperBound(_ key: Key) -> Index {
        return _descend(child: { $0._upperBound(key) }, slotInLeaf: { $0._upperBound(key) })
    }

    /// The position of `key`, or `nil` if the tree does not contain it.
    ///
    /// - Complexity: O(log n)
    @inlinable
    public func index(forKey key: Key) -> Index? {
        let index = lowerBound(key)
        if !index._isEnd && index._leaf._keys[index._slot] == key {
            return index
        }
        return nil
    }
}

extension BTree: BidirectionalCollection {
    /// A key-value pair.
    public typealias Element = (key: Key, value: Value)

    /// The position of the smallest key (equal to `endIndex` when empty).
    ///
    /// - Complexity: O(log n)
    @inlinable
    public var startIndex: Index {
        return _descend(child: { _ in 0 }, slotInLeaf: { _ in 0 })
    }

    /// The position after the largest key.
    ///
    /// - Complexity: O(log n)
    @inlinable
    public var endIndex: Index {
        return _descend(child: { $0._children.count - 1 }, slotInLeaf: { $0._keys.count })
    }

    /// The element at `position`.
    ///
    /// - Precondition: `position` is a valid index other than `endIndex`.
    /// - Complexity: O(1)
    @inlinable
    public subscript(position: Index) -> Element {
        precondition(!position._isEnd, "Index out of range")
        return (position._leaf._keys[position._slot], position._leaf._values[position._slot])
    }

    /// The position after `i`.
    ///
    /// - Complexity: Amortised O(1), O(log n) worst case.
    @inlinable
    public func index(after i: Index) -> Index {
        var i = i
        i._formSuccessor()
        return i
    }

    /// Advances `i` to the next position.
    ///
    /// - Complexity: Amortised O(1), O(log n) worst case.
    @inlinable
    public func formIndex(after i: inout Index) {
        i._formSuccessor()
    }

    /// The position before `i`.
    ///
    /// - Complexity: Amortised O(1), O(log n) worst case.
    @inlinable
    public func index(before i: Index) -> Index {
        var i = i
        i._formPredecessor()
        return i
    }

    /// Moves `i` to the previous position.
    ///
    /// - Complexity: Amortised O(1), O(log n) worst case.
    @inlinable
    public func formIndex(before i: inout Index) {
        i._formPredecessor()
    }

    /// The element with the smallest key, or `nil` when empty.
    ///
    /// - Complexity: O(log n)
    @inlinable
    public var first: Element? {
        var node = _root
        while !node._isLeaf {
            node = node._children[0]
        }
        guard !node._keys.isEmpty else { return nil }
        return (node._keys[0], node._values[0])
    }

    /// The element with the largest key, or `nil` when empty.
    ///
    /// - Complexity: O(log n)
    @inlinable
    public var last: Element? {
        var node = _root
        while !node._isLeaf {
            node = node._children[node._children.count - 1]
        }
        guard let slot = node._keys.indices.last else { return nil }
        return (node._keys[slot], node._values[slot])
    }

    /// An iterator over the elements in ascending key order.
    public struct Iterator: IteratorProtocol {
        @usableFromInline
        internal var _index: Index

        @inlinable
        internal init(_ index: Index) {
            _index = index
        }

        /// The next element in ascending key order, or `nil` at the end.
        ///
        /// - Complexity: Amortised O(1).
        @inlinable
        public mutating func next() -> Element? {
            let leaf = _index._leaf
            let slot = _index._slot
            guard slot < leaf._keys.count else { return nil }
            let element = (leaf._keys[slot], leaf._values[slot])
            _index._slot = slot + 1
            if slot + 1 == leaf._keys.count {
                _index._moveToNextLeaf()
            }
            return element
        }
    }

    /// Returns an iterator over the elements in ascending key order.
    ///
    /// - Complexity: O(log n)
    @inlinable
    public func makeIterator() -> Iterator {
        return Iterator(startIndex)
    }

    /// The number of positions between `start` and `end` (negative if `end < start`).
    ///
    /// - Complexity: O(k) where k is the distance.
    @inlinable
    public func distance(from start: Index, to end: Index) -> Int {
        var result = 0
        if start <= end {
            var i = start
            while i != end {
                i._formSuccessor()
                result += 1
            }
        } else {
            var i = end
            while i != start {
                i._formSuccessor()
                result -= 1
            }
        }
        return result
    }
}
