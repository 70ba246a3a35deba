extension BTree {
    /// Builds a tree from elements in ascending key order, packing the nodes
    /// bottom-up without any searching or splitting.
    ///
    /// Input that is not strictly ascending is accepted: it is sorted first
    /// (stable), and for duplicate keys the last value wins, exactly as if the
    /// elements had been inserted one by one with ``updateValue(_:forKey:)``.
    ///
    /// - Parameter fanout: Node size; defaults to ``_defaultFanout``.
    /// - Complexity: O(n) for sorted input, O(n log n) otherwise.
    @inlinable
    public init<S: Sequence>(sortedElements elements: S, _fanout fanout: Int = Self._defaultFanout)
    where S.Element == (Key, Value) {
        self.init(_fanout: fanout)
        var keys: [Key] = []
        var values: [Value] = []
        keys.reserveCapacity(elements.underestimatedCount)
        values.reserveCapacity(elements.underestimatedCount)
        var ascending = true
        for (key, value) in elements {
            if ascending, let previous = keys.last, !(previous < key) {
                ascending = false
            }
            keys.append(key)
            values.append(value)
        }
        if !ascending {
            Self._sortKeepingLast(&keys, &values)
        }
        _bulkLoad(keys: keys, values: values)
    }

    /// Builds a tree from parallel arrays of keys in ascending order and their
    /// values, without gathering them into arrays of its own first: a caller that
    /// already holds its keys in arrays builds a tree of a million entries without
    /// a second copy of them beside the tree.
    ///
    /// Input that is not strictly ascending is accepted, as by
    /// ``init(sortedElements:_fanout:)-(S,_)``: sorted first (stable), the last
    /// value of equal keys kept.
    ///
    /// - Precondition: `keys.count == values.count`.
    /// - Complexity: O(n) for sorted input, O(n log n) otherwise.
    @inlinable
    public init(sortedKeys keys: [Key], values: [Value], _fanout fanout: Int = Self._defaultFanout) {
        precondition(keys.count == values.count, "BTree(sortedKeys:values:) needs a value for every key")
        self.init(_fanout: fanout)
        var ascending = true
        keys.withUnsafeBufferPointer { keys in
            var i = 1
            while i < keys.count {
                if !(keys[i - 1] < keys[i]) {
                    ascending = false
                    break
                }
                i += 1
            }
        }
        if ascending {
            _bulkLoad(keys: keys, values: values)
        } else {
            var keys = keys
            var values = values
            Self._sortKeepingLast(&keys, &values)
            _bulkLoad(keys: keys, values: values)
        }
    }

    /// Builds a tree from `(key:value:)` pairs in ascending key order, such as
    /// the elements of another tree. See ``init(sortedElements:_fanout:)-(S,_)``.
    ///
    /// - Complexity: O(n) for sorted input, O(n log n) otherwise.
    @inlinable
    public init<S: Sequence>(sortedElements elements: S, _fanout fanout: Int = Self._defaultFanout)
    where S.Element == Element {
        self.init(sortedElements: elements.lazy.map { ($0.key, $0.value) }, _fanout: fanout)
    }

    /// Stable-sorts parallel key/value arrays by key and drops all but the last
    /// value of each run of equal keys.
    @inlinable
    internal static func _sortKeepingLast(_ keys: inout [Key], _ values: inout [Value]) {
        let order = keys.indices.sorted { a, b in
            keys[a] < keys[b] || (!(keys[b] < keys[a]) && a < b)
        }
        var sortedKeys: [Key] = []
        var sortedValues: [Value] = []
        sortedKeys.reserveCapacity(keys.count)
        sortedValues.reserveCapacity(keys.count)
        for i in order {
            if let previous = sortedKeys.last, previous == keys[i] {
                sortedValues[sortedValues.count - 1] = values[i]
            } else {
                sortedKeys.append(keys[i])
                sortedValues.append(values[i])
            }
        }
        keys = sortedKeys
        values = sortedValues
    }

    /// Replaces the contents with strictly ascending `keys`/`values`.
    @inlinable
    internal mutating func _bulkLoad(keys: [Key], values: [Value]) {
        let n = keys.count
        _count = n
        guard n > 0 else {
            _root = _Node(leafCapacity: _fanout)
            return
        }
        // Leaves: as few as possible, sizes differing by at most one, which keeps
        // every leaf at or above the minimum fill when there is more than one.
        var level: [(node: _Node, minKey: Key)] = []
        let leafCount = (n + _fanout - 1) / _fanout
        level.reserveCapacity(leafCount)
        var start = 0
        for j in 0..<leafCount {
            let size = n / leafCount + (j < n % leafCount ? 1 : 0)
            let leaf = _Node(
                leafKeys: Array(keys[start..<start + size]),
                values: Array(values[start..<start + size]),
                capacity: _fanout)
            level.append((leaf, keys[start]))
            start += size
        }
        _root = Self._internalLevels(above: level, fanout: _fanout)
        _debugCheckInvariants()
    }

    /// The root of the internal levels built over `level` (nodes with their least keys,
    /// in order), by the same distribution rule as the leaves, until one node remains.
    @inlinable
    internal static func _internalLevels(above leaves: [(node: _Node, minKey: Key)], fanout: Int) -> _Node {
        var level = leaves
        while level.count > 1 {
            let groupCount = (level.count + fanout - 1) / fanout
            var next: [(node: _Node, minKey: Key)] = []
            next.reserveCapacity(groupCount)
            var first = 0
            for g in 0..<groupCount {
                let size = level.count / groupCount + (g < level.count % groupCount ? 1 : 0)
                let group = level[first..<first + size]
                let node = _Node(
                    separators: group.dropFirst().map { $0.minKey },
                    children: group.map { $0.node },
                    capacity: fanout)
                next.append((node, group[first].minKey))
                first += size
            }
            level = next
        }
        return level[0].node
    }

    /// Builds a tree of `count` entries that `fill` puts in by rank: it calls `put(rank,
    /// key, value)` once for each rank in `0..<count`, in any order, and the entry goes
    /// straight to its place among the leaves. A caller that knows each entry's rank (from
    /// sorting small prefixes of the keys) makes the keys in the order it holds their
    /// sources, and needs no array of them, nor a pass that gathers them in key order.
    ///
    /// Returns `nil` if the keys, put in rank order, are not strictly ascending.
    ///
    /// - Precondition: `fill` puts every rank in `0..<count` exactly once.
    /// - Complexity: O(n), and n calls of `put`.
    @inlinable
    public static func byRank(
        count n: Int, placeholder: (key: Key, value: Value), _fanout fanout: Int = Self._defaultFanout,
        fill: (_ put: (_ rank: Int, _ key: Key, _ value: Value) -> Void) -> Void
    ) -> BTree? {
        precondition(n >= 0, "BTree.byRank(count:) needs a count of at least zero")
        var tree = BTree(_fanout: fanout)
        guard n > 0 else { return tree }
        // The leaves of _bulkLoad: sizes q + 1 for the first r, q for the rest.
        let leafCount = (n + fanout - 1) / fanout
        let q = n / leafCount
        let r = n % leafCount
        let leaves: [_Node] = (0..<leafCount).map { j in
            let size = q + (j < r ? 1 : 0)
            return _Node(
                leafKeys: Array(repeating: placeholder.key, count: size),
                values: Array(repeating: placeholder.value, count: size), capacity: fanout)
        }
        let large = r * (q + 1)
        fill { rank, key, value in
            precondition(rank >= 0 && rank < n, "BTree.byRank: a rank out of range")
            let (leaf, slot) =
                rank < large
                ? rank.quotientAndRemainder(dividingBy: q + 1)
                : {
                    let (leaf, slot) = (rank - large).quotientAndRemainder(dividingBy: q)
                    return (r + leaf, slot)
                }()
            leaves[leaf]._keys[slot] = key
            leaves[leaf]._values[slot] = value
        }
        var previous: Key?
        for leaf in leaves {
            for key in leaf._keys {
                if let previous, !(previous < key) { return nil }
                previous = key
            }
        }
        tree._count = n
        tree._root = _internalLevels(above: leaves.map { ($0, $0._keys[0]) }, fanout: fanout)
        tree._debugCheckInvariants()
        return tree
    }
}
