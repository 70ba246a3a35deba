extension BTree {
    /// The elements whose keys lie in `range`, in ascending order. Iterate the
    /// result's `reversed()` for descending order; both directions step through
    /// the leaves without re-descending from the root.
    ///
    /// - Complexity: O(log n) to locate the bounds; iteration is amortised O(1) per element.
    @inlinable
    public func elements(in range: Range<Key>) -> SubSequence {
        return self[lowerBound(range.lowerBound)..<lowerBound(range.upperBound)]
    }

    /// The elements whose keys lie in `range`, in ascending order.
    ///
    /// - Complexity: O(log n) to locate the bounds; iteration is amortised O(1) per element.
    @inlinable
    public func elements(in range: ClosedRange<Key>) -> SubSequence {
        return self[lowerBound(range.lowerBound)..<upperBound(range.upperBound)]
    }

    /// The elements whose keys are `>= range.lowerBound`, in ascending order.
    ///
    /// - Complexity: O(log n) to locate the bounds; iteration is amortised O(1) per element.
    @inlinable
    public func elements(in range: PartialRangeFrom<Key>) -> SubSequence {
        return self[lowerBound(range.lowerBound)..<endIndex]
    }

    /// The elements whose keys are `< range.upperBound`, in ascending order.
    ///
    /// - Complexity: O(log n) to locate the bounds; iteration is amortised O(1) per element.
    @inlinable
    public func elements(in range: PartialRangeUpTo<Key>) -> SubSequence {
        return self[startIndex..<lowerBound(range.upperBound)]
    }

    /// The elements whose keys are `<= range.upperBound`, in ascending order.
    ///
    /// - Complexity: O(log n) to locate the bounds; iteration is amortised O(1) per element.
    @inlinable
    public func elements(in range: PartialRangeThrough<Key>) -> SubSequence {
        return self[startIndex..<upperBound(range.upperBound)]
    }

    /// Calls `body` for each element whose key lies in `range`, in ascending
    /// order, or descending order when `reverse` is `true`.
    ///
    /// To stop early, iterate ``elements(in:)-(Range<Key>)`` (or its `reversed()`) with `for`/`break` instead.
    ///
    /// - Complexity: O(log n + k) for k visited elements.
    @inlinable
    public func forEach(
        in range: Range<Key>, reverse: Bool = false, _ body: (Element) throws -> Void
    ) rethrows {
        try _forEach(
            from: lowerBound(range.lowerBound), to: lowerBound(range.upperBound),
            reverse: reverse, body)
    }

    /// Calls `body` for each element whose key lies in `range`, in ascending
    /// order, or descending order when `reverse` is `true`.
    ///
    /// - Complexity: O(log n + k) for k visited elements.
    @inlinable
    public func forEach(
        in range: ClosedRange<Key>, reverse: Bool = false, _ body: (Element) throws -> Void
    ) rethrows {
        try _forEach(
            from: lowerBound(range.lowerBound), to: upperBound(range.upperBound),
            reverse: reverse, body)
    }

    @inlinable
    internal func _forEach(
        from start: Index, to end: Index, reverse: Bool, _ body: (Element) throws -> Void
    ) rethrows {
        guard start < end else { return }
        if reverse {
            var i = end
            while i != start {
                i._formPredecessor()
                try body((i._leaf._keys[i._slot], i._leaf._values[i._slot]))
            }
        } else {
            var i = start
            while i != end {
                try body((i._leaf._keys[i._slot], i._leaf._values[i._slot]))
                i._formSuccessor()
            }
        }
    }
}
