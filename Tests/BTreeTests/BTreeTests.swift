import BTree
import Testing

/// Node sizes used by the randomized tests: small, so splits, borrows, merges and
/// root changes happen constantly.
let smallFanouts = [4, 5, 6, 7, 8, 16]

@Suite("BTree randomized against a sorted-array model")
struct RandomizedTests {
    /// Checks every key in `lo...hi` with exact lookup, lower and upper bound.
    func checkPointQueries(_ tree: IntTree, _ model: SortedArrayModel, _ lo: Int, _ hi: Int, _ seed: UInt64) {
        for key in lo...hi {
            if tree.value(forKey: key) != model.value(forKey: key)
                || tree.contains(key: key) != (model.value(forKey: key) != nil)
            {
                Issue.record("seed \(seed): lookup of \(key)")
                return
            }
            let lb = tree.lowerBound(key)
            let mlb = model.lowerBound(key)
            let lbKey: Int? = lb == tree.endIndex ? nil : lb.key
            let mlbKey: Int? = mlb == model.count ? nil : model.elements[mlb].key
            let ub = tree.upperBound(key)
            let mub = model.upperBound(key)
            let ubKey: Int? = ub == tree.endIndex ? nil : tree[ub].key
            let mubKey: Int? = mub == model.count ? nil : model.elements[mub].key
            if lbKey != mlbKey || ubKey != mubKey {
                Issue.record(
                    "seed \(seed): bounds of \(key): \(String(describing: lbKey)) vs \(String(describing: mlbKey)), \(String(describing: ubKey)) vs \(String(describing: mubKey))"
                )
                return
            }
        }
    }

    /// Runs one random sequence of operations, comparing after each step.
    func runSequence(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let fanout = smallFanouts[Int.random(in: 0..<smallFanouts.count, using: &rng)]
        let keySpace = [8, 40, 200][Int.random(in: 0..<3, using: &rng)]
        let steps = Int.random(in: 20...160, using: &rng)
        var tree = IntTree(_fanout: fanout)
        var model = SortedArrayModel()
        var snapshots: [(IntTree, SortedArrayModel)] = []
        let context = "seed \(seed) fanout \(fanout) keySpace \(keySpace)"

        for step in 0..<steps {
            let key = Int.random(in: 0..<keySpace, using: &rng)
            let value = Int.random(in: 0..<1_000_000, using: &rng)
            // Bias towards growth early on and towards shrinking later, so trees
            // grow several levels deep and then shrink back down.
            let growing = step < steps / 2
            let roll = Int.random(in: 0..<100, using: &rng)
            switch roll {
            case 0..<(growing ? 50 : 25):
                let old = tree.updateValue(value, forKey: key)
                let expected = model.updateValue(value, forKey: key)
                #expect(old == expected, "\(context) step \(step): updateValue(\(key))")
            case 50..<60, 25..<35:
                let result = tree.insert(value, forKey: key)
                let expected = model.insert(value, forKey: key)
                #expect(
                    result.inserted == expected.inserted && result.existing == expected.existing,
                    "\(context) step \(step): insert(\(key))")
            case 60..<62, 35..<37:
                // Copy, then mutate the copy: the original must not change.
                snapshots.append((tree, model))
                var copy = tree
                copy.updateValue(-1, forKey: key)
                copy.removeValue(forKey: key &+ 1)
                #expect(flat(tree) == flat(model.elements), "\(context) step \(step): copy mutation leaked")
            case 62..<64, 37..<39:
                let lo = Int.random(in: -2..<keySpace + 2, using: &rng)
                let hi = Int.random(in: lo..<keySpace + 3, using: &rng)
                let forward = tree.elements(in: lo..<hi)
                let expected = Array(model.elements[model.lowerBound(lo)..<model.lowerBound(hi)])
                #expect(flat(forward) == flat(expected), "\(context) step \(step): range \(lo)..<\(hi)")
                #expect(
                    flat(forward.reversed()) == flat(expected.reversed()),
                    "\(context) step \(step): reversed range \(lo)..<\(hi)")
            default:
                let old = tree.removeValue(forKey: key)
                let expected = model.removeValue(forKey: key)
                #expect(old == expected, "\(context) step \(step): removeValue(\(key))")
            }
            #expect(tree.count == model.count, "\(context) step \(step): count")
            if step % 16 == 0 {
                let violations = tree._invariantViolations()
                #expect(violations.isEmpty, "\(context) step \(step): \(violations)")
            }
        }
        expectMatches(tree, model, context)
        checkPointQueries(tree, model, -1, keySpace, seed)
        for (i, (snapshot, snapshotModel)) in snapshots.enumerated() {
            expectMatches(snapshot, snapshotModel, "\(context) snapshot \(i)")
        }
        // Finally drain the tree completely in random order.
        var remaining = model.keys
        remaining.shuffle(using: &rng)
        for key in remaining {
            #expect(tree.removeValue(forKey: key) == model.removeValue(forKey: key), "\(context): drain \(key)")
        }
        expectMatches(tree, model, "\(context) drained")
    }

    @Test("random operation sequences", arguments: 0..<8)
    func randomSequences(batch: Int) {
        for i in 0..<250 {
            runSequence(seed: UInt64(batch * 250 + i))
        }
    }

    @Test("a few long sequences build deep trees", arguments: [4, 5, 9])
    func longSequences(fanout: Int) {
        let seed = UInt64(10_000 + fanout)
        var rng = SplitMix64(seed: seed)
        var tree = IntTree(_fanout: fanout)
        var model = SortedArrayModel()
        for round in 0..<3 {
            for _ in 0..<600 {
                let key = Int.random(in: 0..<2_000, using: &rng)
                #expect(tree.updateValue(round, forKey: key) == model.updateValue(round, forKey: key), "seed \(seed)")
            }
            expectMatches(tree, model, "seed \(seed) round \(round) after inserts")
            checkPointQueries(tree, model, -1, 2_000, seed)
            for _ in 0..<500 {
                let key = Int.random(in: 0..<2_000, using: &rng)
                #expect(tree.removeValue(forKey: key) == model.removeValue(forKey: key), "seed \(seed)")
            }
            expectMatches(tree, model, "seed \(seed) round \(round) after removals")
        }
    }
}

@Suite("BTree behaviour")
struct BehaviourTests {
    @Test("removal down to empty, then reuse", arguments: smallFanouts)
    func removeToEmpty(fanout: Int) {
        var rng = SplitMix64(seed: UInt64(fanout))
        var tree = IntTree(_fanout: fanout)
        var model = SortedArrayModel()
        var keys = Array(0..<300)
        keys.shuffle(using: &rng)
        for key in keys {
            tree.updateValue(key * 10, forKey: key)
            _ = model.updateValue(key * 10, forKey: key)
        }
        expectMatches(tree, model, "fanout \(fanout) full")
        keys.shuffle(using: &rng)
        for (i, key) in keys.enumerated() {
            #expect(tree.removeValue(forKey: key) == key * 10)
            #expect(tree.removeValue(forKey: key) == nil, "double removal of \(key)")
            _ = model.removeValue(forKey: key)
            if i % 37 == 0 {
                expectMatches(tree, model, "fanout \(fanout) removed \(i + 1)")
            }
        }
        expectMatches(tree, model, "fanout \(fanout) empty")
        #expect(tree.isEmpty)
        #expect(tree.first == nil && tree.last == nil)
        #expect(tree.startIndex == tree.endIndex)
        var iterator = tree.makeIterator()
        #expect(iterator.next() == nil)
        #expect(tree.elements(in: 0..<100).isEmpty)
        tree.updateValue(7, forKey: 7)
        #expect(flat(tree) == [7, 7])
    }

    @Test("ascending and descending insertion", arguments: smallFanouts + [64])
    func monotonicInsertion(fanout: Int) {
        var ascending = IntTree(_fanout: fanout)
        var descending = IntTree(_fanout: fanout)
        for key in 0..<500 {
            ascending.updateValue(-key, forKey: key)
            descending.updateValue(-(499 - key), forKey: 499 - key)
        }
        let expected = flat((0..<500).map { (key: $0, value: -$0) })
        #expect(flat(ascending) == expected)
        #expect(flat(descending) == expected)
        #expect(ascending._invariantViolations().isEmpty)
        #expect(descending._invariantViolations().isEmpty)
        #expect(ascending == descending)
    }

    @Test("range scans in both directions match the model", arguments: [4, 5, 8])
    func rangeScans(fanout: Int) {
        var rng = SplitMix64(seed: 99 + UInt64(fanout))
        var tree = IntTree(_fanout: fanout)
        var model = SortedArrayModel()
        for _ in 0..<400 {
            let key = Int.random(in: 0..<1_000, using: &rng) * 2  // even keys only, so odd bounds miss
            tree.updateValue(key, forKey: key)
            _ = model.updateValue(key, forKey: key)
        }
        for trial in 0..<300 {
            let lo = Int.random(in: -5..<2_005, using: &rng)
            let hi = Int.random(in: lo..<2_010, using: &rng)
            let context = "fanout \(fanout) trial \(trial) bounds \(lo) \(hi)"
            let half = Array(model.elements[model.lowerBound(lo)..<model.lowerBound(hi)])
            let closed = Array(model.elements[model.lowerBound(lo)..<model.upperBound(hi)])
            let from = Array(model.elements[model.lowerBound(lo)...])
            let upTo = Array(model.elements[..<model.lowerBound(hi)])
            let through = Array(model.elements[..<model.upperBound(hi)])
            #expect(flat(tree.elements(in: lo..<hi)) == flat(half), "\(context)")
            #expect(flat(tree.elements(in: lo...hi)) == flat(closed), "\(context)")
            #expect(flat(tree.elements(in: lo...)) == flat(from), "\(context)")
            #expect(flat(tree.elements(in: ..<hi)) == flat(upTo), "\(context)")
            #expect(flat(tree.elements(in: ...hi)) == flat(through), "\(context)")
            #expect(flat(tree.elements(in: lo...hi).reversed()) == flat(closed.reversed()), "\(context)")

            var visited: [(key: Int, value: Int)] = []
            tree.forEach(in: lo..<hi) { visited.append($0) }
            #expect(flat(visited) == flat(half), "\(context) forEach")
            visited = []
            tree.forEach(in: lo..<hi, reverse: true) { visited.append($0) }
            #expect(flat(visited) == flat(half.reversed()), "\(context) forEach reverse")
            visited = []
            tree.forEach(in: lo...hi, reverse: true) { visited.append($0) }
            #expect(flat(visited) == flat(closed.reversed()), "\(context) forEach closed reverse")
            #expect(tree.elements(in: lo..<hi).count == half.count, "\(context) count")
        }
    }

    @Test("index navigation, comparison and distance")
    func indexNavigation() {
        var tree = IntTree(_fanout: 4)
        for key in stride(from: 0, to: 200, by: 2) {
            tree.updateValue(key, forKey: key)
        }
        var forward: [Int] = []
        var i = tree.startIndex
        var previous: IntTree.Index? = nil
        while i != tree.endIndex {
            if let previous {
                #expect(previous < i)
                #expect(!(i < previous))
            }
            #expect(i < tree.endIndex)
            forward.append(tree[i].key)
            previous = i
            tree.formIndex(after: &i)
        }
        #expect(forward == Array(stride(from: 0, to: 200, by: 2)))
        var backward: [Int] = []
        i = tree.endIndex
        while i != tree.startIndex {
            tree.formIndex(before: &i)
            backward.append(i.key)
        }
        #expect(backward == forward.reversed())
        #expect(tree.distance(from: tree.startIndex, to: tree.endIndex) == 100)
        #expect(tree.distance(from: tree.endIndex, to: tree.startIndex) == -100)
        #expect(tree.index(forKey: 42).map { tree[$0].key } == 42)
        #expect(tree.index(forKey: 43) == nil)
        #expect(tree.lowerBound(43).key == 44)
        #expect(tree.upperBound(42).key == 44)
        #expect(tree.lowerBound(42).key == 42)
        #expect(tree.lowerBound(500) == tree.endIndex)
        #expect(tree.upperBound(198) == tree.endIndex)
        #expect(tree.lowerBound(-1) == tree.startIndex)
        #expect(tree.index(before: tree.endIndex).key == 198)
        #expect(Array(tree.reversed().map(\.key).prefix(3)) == [198, 196, 194])
    }

    @Test("copies are independent values", arguments: [4, 7, 64])
    func valueSemantics(fanout: Int) {
        var rng = SplitMix64(seed: 7 * UInt64(fanout))
        var original = IntTree(_fanout: fanout)
        for key in 0..<400 {
            original.updateValue(key, forKey: key)
        }
        let frozen = flat(original)
        var copies: [IntTree] = []
        for round in 0..<20 {
            var copy = original
            for _ in 0..<50 {
                let key = Int.random(in: -10..<410, using: &rng)
                if Bool.random(using: &rng) {
                    copy.updateValue(round * 1_000 + key, forKey: key)
                } else {
                    copy.removeValue(forKey: key)
                }
            }
            #expect(copy._invariantViolations().isEmpty)
            copies.append(copy)
            #expect(flat(original) == frozen, "round \(round): original changed")
        }
        // Mutating the original must not disturb any copy either.
        let copyContents = copies.map { flat($0) }
        for key in 0..<400 where key % 3 == 0 {
            original.removeValue(forKey: key)
        }
        original.updateValue(0, forKey: 1_000)
        #expect(copies.map { flat($0) } == copyContents)
        #expect(original._invariantViolations().isEmpty)
        #expect(original.count == 400 - 134 + 1)

        // An index obtained before a mutation keeps the old contents alive.
        var tree = original
        let start = tree.startIndex
        tree.removeAll()
        #expect(tree.isEmpty)
        #expect(original[start].key == 1)
    }

    @Test("subscript, removeFirst, removeLast, Equatable")
    func conveniences() {
        var tree = IntTree(_fanout: 5)
        for key in 0..<50 {
            tree[key] = key * key
        }
        #expect(tree[7] == 49)
        tree[7] = nil
        #expect(tree[7] == nil)
        #expect(tree.count == 49)
        #expect(tree.removeFirst()?.key == 0)
        #expect(tree.removeLast()?.key == 49)
        #expect(tree.first?.key == 1)
        #expect(tree.last?.key == 48)
        var other = IntTree(_fanout: 8)
        for key in (1...48).reversed() where key != 7 {
            other[key] = key * key
        }
        #expect(tree == other)
        other[3] = 0
        #expect(tree != other)
        var empty = IntTree()
        #expect(empty.removeFirst() == nil)
        #expect(empty.removeLast() == nil)
        #expect(empty._nodeFanout == IntTree._defaultFanout)
        #expect(IntTree(_fanout: 1)._nodeFanout == 4)
    }

    @Test("string keys and reference-type values")
    func nonTrivialTypes() {
        final class Box {
            let value: Int
            init(_ value: Int) { self.value = value }
        }
        var rng = SplitMix64(seed: 1234)
        var tree = BTree<String, Box>(_fanout: 6)
        var dictionary: [String: Int] = [:]
        for _ in 0..<2_000 {
            let key = String(Int.random(in: 0..<500, using: &rng), radix: 36)
            if Int.random(in: 0..<3, using: &rng) == 0 {
                #expect(tree.removeValue(forKey: key)?.value == dictionary.removeValue(forKey: key))
            } else {
                let value = Int.random(in: 0..<100, using: &rng)
                #expect(tree.updateValue(Box(value), forKey: key)?.value == dictionary.updateValue(value, forKey: key))
            }
        }
        #expect(tree.map(\.key) == dictionary.keys.sorted())
        #expect(tree.map(\.value.value) == dictionary.sorted { $0.key < $1.key }.map(\.value))
        #expect(tree._invariantViolations().isEmpty)
    }
}

@Suite("BTree bulk loading")
struct BulkLoadTests {
    @Test("sorted input of every size", arguments: [4, 5, 6, 16])
    func sortedInput(fanout: Int) {
        for n in 0...300 {
            let elements = (0..<n).map { ($0 * 3, $0) }
            var tree = IntTree(sortedElements: elements, _fanout: fanout)
            var model = SortedArrayModel(elements: elements.map { (key: $0.0, value: $0.1) })
            expectMatches(tree, model, "fanout \(fanout) n \(n)")
            // The loaded tree must accept further mutations.
            for key in [-1, 1, n * 3, n * 3 / 2] {
                #expect(tree.updateValue(key, forKey: key) == model.updateValue(key, forKey: key))
            }
            for key in stride(from: 0, to: n * 3, by: 6) {
                #expect(tree.removeValue(forKey: key) == model.removeValue(forKey: key))
            }
            expectMatches(tree, model, "fanout \(fanout) n \(n) mutated")
        }
    }

    @Test("unsorted input with duplicates: last value wins")
    func unsortedInput() {
        for seed in UInt64(0)..<200 {
            var rng = SplitMix64(seed: seed)
            let n = Int.random(in: 0..<200, using: &rng)
            let elements = (0..<n).map { _ in
                (Int.random(in: 0..<100, using: &rng), Int.random(in: 0..<1_000, using: &rng))
            }
            var model = SortedArrayModel()
            for (key, value) in elements {
                _ = model.updateValue(value, forKey: key)
            }
            let tree = IntTree(sortedElements: elements, _fanout: 4 + Int(seed % 5))
            expectMatches(tree, model, "seed \(seed)")
        }
    }

    @Test("parallel key and value arrays, sorted or not, match the element sequence")
    func parallelArrays() {
        for seed in UInt64(0)..<200 {
            var rng = SplitMix64(seed: seed)
            let n = Int.random(in: 0..<300, using: &rng)
            let sorted = seed % 2 == 0
            var keys = (0..<n).map { _ in Int.random(in: 0..<(sorted ? 10_000 : 150), using: &rng) }
            if sorted { keys = Array(Set(keys)).sorted() }
            let values = keys.indices.map { _ in Int.random(in: 0..<1_000, using: &rng) }
            var model = SortedArrayModel()
            for (key, value) in zip(keys, values) {
                _ = model.updateValue(value, forKey: key)
            }
            let fanout = 4 + Int(seed % 5)
            var tree = IntTree(sortedKeys: keys, values: values, _fanout: fanout)
            expectMatches(tree, model, "seed \(seed)")
            #expect(tree == IntTree(sortedElements: zip(keys, values), _fanout: fanout))
            // The loaded tree must accept further mutations.
            for key in [-1, 5, 20_000] {
                #expect(tree.updateValue(key, forKey: key) == model.updateValue(key, forKey: key))
            }
            expectMatches(tree, model, "seed \(seed) mutated")
        }
    }

    @Test("entries put in by rank, in any order, build the tree the sorted arrays build")
    func entriesByRank() {
        for seed in UInt64(0)..<200 {
            var rng = SplitMix64(seed: seed)
            let keys = Array(
                Set(
                    (0..<Int.random(in: 0..<300, using: &rng)).map { _ in
                        Int.random(in: 0..<10_000, using: &rng)
                    })
            ).sorted()
            let values = keys.indices.map { _ in Int.random(in: 0..<1_000, using: &rng) }
            let fanout = 4 + Int(seed % 5)
            let order = Array(keys.indices).shuffled(using: &rng)
            var tree = IntTree.byRank(count: keys.count, placeholder: (-1, -1), _fanout: fanout) { put in
                for rank in order { put(rank, keys[rank], values[rank]) }
            }
            #expect(tree == IntTree(sortedKeys: keys, values: values, _fanout: fanout), "seed \(seed)")
            var model = SortedArrayModel()
            for (key, value) in zip(keys, values) { _ = model.updateValue(value, forKey: key) }
            if tree != nil { expectMatches(tree!, model, "seed \(seed)") }
            for key in [-1, 5, 20_000] {
                #expect(tree?.updateValue(key, forKey: key) == model.updateValue(key, forKey: key))
            }
            if tree != nil { expectMatches(tree!, model, "seed \(seed) mutated") }
            // Keys that are not strictly ascending by rank give no tree.
            if keys.count >= 2 {
                let swapped = IntTree.byRank(count: keys.count, placeholder: (-1, -1), _fanout: fanout) { put in
                    for rank in order { put(rank, keys[rank == 0 ? 1 : rank == 1 ? 0 : rank], values[rank]) }
                }
                #expect(swapped == nil, "seed \(seed)")
                let repeated = IntTree.byRank(count: keys.count, placeholder: (-1, -1), _fanout: fanout) { put in
                    for rank in order { put(rank, keys[max(0, rank - 1)], values[rank]) }
                }
                #expect(repeated == nil, "seed \(seed)")
            }
        }
    }

    @Test("labelled elements from another tree")
    func fromTree() {
        var source = IntTree(_fanout: 4)
        for key in 0..<100 {
            source[key] = -key
        }
        let copy = IntTree(sortedElements: source, _fanout: 9)
        #expect(copy == source)
        #expect(copy._nodeFanout == 9)
        let defaulted = IntTree(sortedElements: [(1, 1), (2, 2)])
        #expect(flat(defaulted) == [1, 1, 2, 2])
    }
}
