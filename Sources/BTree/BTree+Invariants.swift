extension BTree {
    /// Verifies the structure of the tree and returns a description of every
    /// violation found (empty when the tree is well formed): keys strictly
    /// ascending, separators bounding their subtrees, node occupancy within
    /// [minimum, fanout] except at the root, all leaves at the same depth,
    /// leaf/internal array shapes, and `count` equal to the number of stored elements.
    ///
    /// - Complexity: O(n)
    public func _invariantViolations() -> [String] {
        var violations: [String] = []
        var leafDepth: Int? = nil
        let total = _check(
            _root, depth: 0, lower: nil, upper: nil, isRoot: true,
            leafDepth: &leafDepth, violations: &violations)
        if total != _count {
            violations.append("count is \(_count) but the leaves hold \(total) elements")
        }
        return violations
    }

    /// Traps with a description if ``_invariantViolations()`` finds a problem.
    ///
    /// - Complexity: O(n)
    public func _checkInvariants() {
        let violations = _invariantViolations()
        precondition(violations.isEmpty, "BTree invariant violated: \(violations.prefix(5))")
    }

    /// Runs ``_checkInvariants()`` in debug builds; compiles to nothing in release
    /// builds or when `BTREE_SKIP_INVARIANT_CHECKS` is defined.
    @inlinable
    internal func _debugCheckInvariants() {
        #if DEBUG && !BTREE_SKIP_INVARIANT_CHECKS
            _checkInvariants()
        #endif
    }

    private func _check(
        _ node: _Node, depth: Int, lower: Key?, upper: Key?, isRoot: Bool,
        leafDepth: inout Int?, violations: inout [String]
    ) -> Int {
        func fail(_ message: String) {
            if violations.count < 20 {
                violations.append("depth \(depth): \(message)")
            }
        }
        let keys = node._keys
        for i in keys.indices.dropFirst() where !(keys[i - 1] < keys[i]) {
            fail("keys not strictly ascending at slot \(i)")
        }
        if let lower, let first = keys.first, first < lower {
            fail("key below the separator bound of its subtree")
        }
        if let upper, let last = keys.last, !(last < upper) {
            fail("key not below the separator bound of its subtree")
        }
        if node._isLeaf {
            if !node._children.isEmpty { fail("leaf has children") }
            if node._values.count != keys.count { fail("leaf has \(keys.count) keys but \(node._values.count) values") }
            if keys.count > _fanout { fail("leaf overfull: \(keys.count) > \(_fanout)") }
            if !isRoot && keys.count < _fanout / 2 { fail("leaf underfull: \(keys.count) < \(_fanout / 2)") }
            if let expected = leafDepth {
                if expected != depth { fail("leaf depth \(depth) differs from \(expected)") }
            } else {
                leafDepth = depth
            }
            return keys.count
        }
        let children = node._children
        if !node._values.isEmpty { fail("internal node has values") }
        if children.count != keys.count + 1 {
            fail("internal node has \(keys.count) separators but \(children.count) children")
            return 0
        }
        if children.count > _fanout { fail("internal node overfull: \(children.count) > \(_fanout) children") }
        if isRoot && children.count < 2 { fail("internal root has fewer than 2 children") }
        if !isRoot && children.count < (_fanout + 1) / 2 {
            fail("internal node underfull: \(children.count) < \((_fanout + 1) / 2) children")
        }
        var total = 0
        for (i, child) in children.enumerated() {
            total += _check(
                child, depth: depth + 1,
                lower: i == 0 ? lower : keys[i - 1],
                upper: i == keys.count ? upper : keys[i],
                isRoot: false, leafDepth: &leafDepth, violations: &violations)
        }
        return total
    }
}
