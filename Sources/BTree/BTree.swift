/// An ordered map from `Key` to `Value`, stored as an in-memory B+tree.
///
/// Keys are unique: inserting an existing key replaces (``updateValue(_:forKey:)``)
/// or keeps (``insert(_:forKey:)``) the stored value. Callers that need duplicate
/// keys (for example a non-unique secondary index) make keys unique by appending a
/// tiebreaker, typically the primary key: `(encodedTuple, primaryKey)`.
///
/// `BTree` is a value type. Nodes are reference-counted and shared between copies;
/// a mutation copies only the nodes on the path it touches (copy-on-write), so
/// copying a tree is O(1) and mutating one copy never affects another.
///
/// Leaves hold the elements; internal nodes hold separator keys only. Iteration
/// uses a cursor (``Index``) that remembers the root-to-leaf path, so moving to
/// the next or previous element is amortised O(1) and never re-descends from the
/// root.
///
/// In debug builds every mutation is followed by a full structural check
/// (``_checkInvariants()``), which makes mutations O(n). Define the compilation
/// condition `BTREE_SKIP_INVARIANT_CHECKS` to turn the check off in debug builds.
public struct BTree<Key: Comparable, Value> {
    /// The root node: a leaf (possibly empty) or an internal node with at least two children.
    @usableFromInline
    internal var _root: _Node

    /// Number of elements stored in the tree.
    @usableFromInline
    internal var _count: Int

    /// Maximum number of elements in a leaf and maximum number of children of an internal node.
    @usableFromInline
    internal let _fanout: Int

    /// Creates an empty tree.
    ///
    /// - Complexity: O(1)
    @inlinable
    public init() {
        self.init(_fanout: Self._defaultFanout)
    }

    /// Creates an empty tree with a specific node size. Intended for tests and
    /// benchmarks; values below 4 are raised to 4.
    ///
    /// - Parameter fanout: Maximum number of elements per leaf and children per internal node.
    /// - Complexity: O(1)
    @inlinable
    public init(_fanout fanout: Int) {
        let clamped = Swift.max(4, fanout)
        _fanout = clamped
        _root = _Node(leafCapacity: clamped)
        _count = 0
    }

    /// The node size used by ``init()``: 128, the best common choice of the fanouts
    /// measured for `Int` and `IndexKey` keys (see `Benchmarks/BTREE-RESULTS.md`, and
    /// `Benchmarks/RESULTS.md`, "Measurements behind the code"); it also keeps the
    /// per-node insert/remove shifting and copy-on-write copying smaller than 256.
    ///
    /// - Complexity: O(1)
    @inlinable
    public static var _defaultFanout: Int { 128 }

    /// The node size of this tree.
    ///
    /// - Complexity: O(1)
    @inlinable
    public var _nodeFanout: Int { _fanout }

    /// The number of key-value pairs in the tree.
    ///
    /// - Complexity: O(1)
    @inlinable
    public var count: Int { _count }

    /// Whether the tree contains no elements.
    ///
    /// - Complexity: O(1)
    @inlinable
    public var isEmpty: Bool { _count == 0 }

    /// Removes all elements, keeping the node size.
    ///
    /// - Complexity: O(1) (releasing the old nodes is O(n) when they are not shared)
    @inlinable
    public mutating func removeAll() {
        _root = _Node(leafCapacity: _fanout)
        _count = 0
        _debugCheckInvariants()
    }

    /// Copies the root node if it is shared with another tree value.
    @inlinable
    internal mutating func _makeRootUnique() {
        if !isKnownUniquelyReferenced(&_root) {
            _root = _root._copy()
        }
    }
}

// Nodes are never mutated while shared (copy-on-write with
// `isKnownUniquelyReferenced`), so a tree can be sent across concurrency
// domains just like `Array`.
extension BTree: @unchecked Sendable where Key: Sendable, Value: Sendable {}

extension BTree: Equatable where Value: Equatable {
    /// Two trees are equal when they contain the same keys mapped to equal values.
    ///
    /// - Complexity: O(n)
    @inlinable
    public static func == (lhs: BTree, rhs: BTree) -> Bool {
        if lhs._root === rhs._root { return true }
        guard lhs.count == rhs.count else { return false }
        return lhs.elementsEqual(rhs) { $0.key == $1.key && $0.value == $1.value }
    }
}
