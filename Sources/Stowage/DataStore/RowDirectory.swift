import BTree

/// One entity's primary-key index: each primary key to its stored row, in key order.
///
/// A store hands out primary keys in order from 1 (``SnapshotTable/nextPrimaryKey``), so
/// the rows sit in pages of a dense array and a look-up is two array reads, where a
/// B+tree took a descent of several binary searches. A page is made when its first row
/// arrives and dropped when its last row goes. Keys at or above ``denseLimit``, or below
/// zero, which only a file written by some other program could hold, go to a B+tree beside
/// the pages; so the page array never grows past `denseLimit >> pageShift` entries,
/// whatever keys a file holds.
struct RowDirectory: Sendable, Sequence {
    static let pageShift = 10
    static let pageSize = 1 << pageShift
    static let slotMask = pageSize - 1
    /// Keys from 0 up to here live in pages: 2^18 pages at most, an array of 2 MiB.
    static let denseLimit: UInt64 = 1 << 28

    /// Page `p` holds keys `p << pageShift ..< (p + 1) << pageShift`; empty when none is live.
    private var pages: [[StoredRow?]] = []
    /// The live rows in each page.
    private var pageCounts: [Int32] = []
    /// Rows whose keys are outside the dense range.
    private var overflow = BTree<Int64, StoredRow>()
    /// The number of rows.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    init() {}

    /// A directory of `elements`, which must have distinct keys (in any order).
    init<S: Sequence>(sortedElements elements: S) where S.Element == (Int64, StoredRow) {
        for (key, row) in elements { updateValue(row, forKey: key) }
    }

    @inline(__always)
    private static func isDense(_ key: Int64) -> Bool { UInt64(bitPattern: key) < denseLimit }

    /// The row stored under `key`.
    /// - Complexity: O(1) for keys in the dense range.
    func value(forKey key: Int64) -> StoredRow? {
        guard Self.isDense(key) else { return overflow.value(forKey: key) }
        let page = Int(truncatingIfNeeded: key >> Self.pageShift)
        guard page < pages.count, !pages[page].isEmpty else { return nil }
        return pages[page][Int(truncatingIfNeeded: key) & Self.slotMask]
    }

    /// Stores `row` under `key`, returning the row it replaces.
    @discardableResult
    mutating func updateValue(_ row: StoredRow, forKey key: Int64) -> StoredRow? {
        guard Self.isDense(key) else {
            let old = overflow.updateValue(row, forKey: key)
            if old == nil { count += 1 }
            return old
        }
        let page = Int(truncatingIfNeeded: key >> Self.pageShift)
        let slot = Int(truncatingIfNeeded: key) & Self.slotMask
        if page >= pages.count {
            let more = page + 1 - pages.count
            pages.append(contentsOf: repeatElement([], count: more))
            pageCounts.append(contentsOf: repeatElement(0, count: more))
        }
        if pages[page].isEmpty { pages[page] = Array(repeating: nil, count: Self.pageSize) }
        let old = pages[page][slot]
        pages[page][slot] = row
        if old == nil {
            count += 1
            pageCounts[page] += 1
        }
        return old
    }

    /// Removes the row stored under `key`, returning it.
    @discardableResult
    mutating func removeValue(forKey key: Int64) -> StoredRow? {
        guard Self.isDense(key) else {
            let old = overflow.removeValue(forKey: key)
            if old != nil { count -= 1 }
            return old
        }
        let page = Int(truncatingIfNeeded: key >> Self.pageShift)
        let slot = Int(truncatingIfNeeded: key) & Self.slotMask
        guard page < pages.count, !pages[page].isEmpty, let old = pages[page][slot] else { return nil }
        pages[page][slot] = nil
        count -= 1
        pageCounts[page] -= 1
        if pageCounts[page] == 0 { pages[page] = [] }
        return old
    }

    /// The rows in ascending key order: the overflow tree's negative keys, the pages, then
    /// the overflow tree's keys past the dense range.
    struct Iterator: IteratorProtocol {
        private let directory: RowDirectory
        private var overflow: BTree<Int64, StoredRow>.Iterator
        /// The first overflow row past the dense range, read while looking for negative keys.
        private var pending: (key: Int64, value: StoredRow)?
        private var inPages = false
        private var pastPages = false
        private var page = 0
        private var slot = 0

        init(_ directory: RowDirectory) {
            self.directory = directory
            overflow = directory.overflow.makeIterator()
        }

        mutating func next() -> (key: Int64, value: StoredRow)? {
            if !inPages && !pastPages {
                if let element = overflow.next() {
                    if element.key < 0 { return element }
                    pending = element
                }
                inPages = true
            }
            if inPages {
                let pages = directory.pages
                while page < pages.count {
                    if directory.pageCounts[page] > 0 {
                        while slot < RowDirectory.pageSize {
                            let current = slot
                            slot += 1
                            if let row = pages[page][current] {
                                return (Int64(page << RowDirectory.pageShift | current), row)
                            }
                        }
                    }
                    page += 1
                    slot = 0
                }
                inPages = false
                pastPages = true
            }
            if let element = pending {
                pending = nil
                return element
            }
            return overflow.next()
        }
    }

    func makeIterator() -> Iterator { Iterator(self) }

    /// The row with the smallest key.
    var first: (key: Int64, value: StoredRow)? {
        var iterator = makeIterator()
        return iterator.next()
    }

    /// The row with the largest key.
    var last: (key: Int64, value: StoredRow)? {
        if let element = overflow.last, element.key >= 0 { return element }
        for page in pages.indices.reversed() where pageCounts[page] > 0 {
            for slot in (0..<Self.pageSize).reversed() {
                if let row = pages[page][slot] { return (Int64(page << Self.pageShift | slot), row) }
            }
        }
        return overflow.last
    }

    var underestimatedCount: Int { count }
}
