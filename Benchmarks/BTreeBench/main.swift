// btree-bench: BTree vs Dictionary vs sorted Array, and a fanout sweep.
//
// Build and run:  swift build -c release --product btree-bench && .build/release/btree-bench
// Options:        --n 1000000  --runs 5  --array-n 100000  --fanouts 16,32,64,128,256  --skip-sweep  --skip-compare

import BTree
import Foundation
import IndexKey

// MARK: - Configuration

struct Options {
    var n = 1_000_000
    var runs = 5
    var arrayInsertN = 100_000
    var fanouts = [16, 32, 64, 128, 256]
    var sweep = true
    var compare = true

    init(arguments: [String]) {
        var i = 1
        while i < arguments.count {
            let value = i + 1 < arguments.count ? arguments[i + 1] : ""
            switch arguments[i] {
            case "--n":
                n = Int(value) ?? n
                i += 1
            case "--runs":
                runs = Int(value) ?? runs
                i += 1
            case "--array-n":
                arrayInsertN = Int(value) ?? arrayInsertN
                i += 1
            case "--fanouts":
                fanouts = value.split(separator: ",").compactMap { Int($0) }
                i += 1
            case "--skip-sweep": sweep = false
            case "--skip-compare": compare = false
            default: print("unknown option \(arguments[i])")
            }
            i += 1
        }
    }
}

// MARK: - Utilities

struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Sink for results so the optimiser cannot drop the measured work.
nonisolated(unsafe) var checksum = 0

func seconds(_ body: () -> Void) -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    body()
    let elapsed = clock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

func ms(_ s: Double) -> String { String(format: "%.1f", s * 1000) }
func nsPerOp(_ s: Double, _ n: Int) -> String { String(format: "%.0f", s * 1e9 / Double(n)) }

/// Medians of `runs` repetitions of a multi-phase measurement.
func medians(runs: Int, _ measure: () -> [Double]) -> [Double] {
    var samples: [[Double]] = []
    for _ in 0..<runs {
        samples.append(measure())
    }
    return (0..<samples[0].count).map { phase in median(samples.map { $0[phase] }) }
}

// MARK: - Workloads

/// Insert all keys, look all up in another order, iterate, then remove all.
/// Returns [insert, lookup, iterate, remove] seconds.
@inline(never)
func measureBTree<K: Comparable>(keys: [K], lookups: [K], fanout: Int) -> [Double] {
    var tree = BTree<K, Int>(_fanout: fanout)
    let insert = seconds {
        for (i, key) in keys.enumerated() {
            tree.updateValue(i, forKey: key)
        }
    }
    let lookup = seconds {
        var sum = 0
        for key in lookups {
            sum &+= tree.value(forKey: key) ?? 0
        }
        checksum &+= sum
    }
    let iterate = seconds {
        var sum = 0
        for element in tree {
            sum &+= element.value
        }
        checksum &+= sum
    }
    let remove = seconds {
        for key in lookups {
            tree.removeValue(forKey: key)
        }
    }
    checksum &+= tree.count
    return [insert, lookup, iterate, remove]
}

@inline(never)
func measureDictionary(keys: [Int], lookups: [Int]) -> [Double] {
    var dictionary: [Int: Int] = [:]
    let insert = seconds {
        for (i, key) in keys.enumerated() {
            dictionary[key] = i
        }
    }
    let lookup = seconds {
        var sum = 0
        for key in lookups {
            sum &+= dictionary[key] ?? 0
        }
        checksum &+= sum
    }
    let iterate = seconds {
        var sum = 0
        for (_, value) in dictionary {
            sum &+= value
        }
        checksum &+= sum
    }
    let remove = seconds {
        for key in lookups {
            dictionary.removeValue(forKey: key)
        }
    }
    checksum &+= dictionary.count
    return [insert, lookup, iterate, remove]
}

func lowerBound(_ array: [(key: Int, value: Int)], _ key: Int) -> Int {
    array.withUnsafeBufferPointer { buffer in
        var low = 0
        var high = buffer.count
        while low < high {
            let mid = (low + high) / 2
            if buffer[mid].key < key { low = mid + 1 } else { high = mid }
        }
        return low
    }
}

/// Sorted array: binary-search insert of `insertKeys` (quadratic, so run at a
/// smaller size), lookups and iteration on an array of all `keys`.
/// Returns [insert (at insertKeys.count), lookup, iterate].
@inline(never)
func measureSortedArray(insertKeys: [Int], keys: [Int], lookups: [Int]) -> [Double] {
    var small: [(key: Int, value: Int)] = []
    let insert = seconds {
        for (i, key) in insertKeys.enumerated() {
            let slot = lowerBound(small, key)
            if slot < small.count && small[slot].key == key {
                small[slot].value = i
            } else {
                small.insert((key, i), at: slot)
            }
        }
    }
    checksum &+= small.count
    let array = keys.enumerated().map { (key: $0.element, value: $0.offset) }.sorted { $0.key < $1.key }
    let lookup = seconds {
        var sum = 0
        for key in lookups {
            let slot = lowerBound(array, key)
            if slot < array.count && array[slot].key == key {
                sum &+= array[slot].value
            }
        }
        checksum &+= sum
    }
    let iterate = seconds {
        var sum = 0
        for element in array {
            sum &+= element.value
        }
        checksum &+= sum
    }
    return [insert, lookup, iterate]
}

// MARK: - Main

let options = Options(arguments: CommandLine.arguments)
var rng = SplitMix64(state: 0x5EED)
let intKeys = (0..<options.n).map { _ in Int(truncatingIfNeeded: rng.next()) }
var intLookups = intKeys
intLookups.shuffle(using: &rng)

print("# btree-bench")
print("")
print("n = \(options.n), medians of \(options.runs) runs, times in ms (ns/op in parentheses).")
print(
    "Keys are uniformly random; lookups hit every key once in shuffled order; remove deletes every key in that order.")
print("")

if options.sweep {
    let byteKeys = (0..<options.n).map { _ in
        IndexKey(bytes: (0..<24).map { _ in UInt8.random(in: 0...255, using: &rng) })
    }
    var byteLookups = byteKeys
    byteLookups.shuffle(using: &rng)

    for (title, run) in [
        ("Int keys", { (fanout: Int) in measureBTree(keys: intKeys, lookups: intLookups, fanout: fanout) }),
        (
            "24-byte IndexKey keys",
            { (fanout: Int) in measureBTree(keys: byteKeys, lookups: byteLookups, fanout: fanout) }
        ),
    ] {
        print("## Fanout sweep: BTree<\(title == "Int keys" ? "Int" : "IndexKey"), Int>, \(title)")
        print("")
        print("| fanout | insert | lookup | iterate | remove |")
        print("|---:|---:|---:|---:|---:|")
        for fanout in options.fanouts {
            let m = medians(runs: options.runs) { run(fanout) }
            let cells = m.map { "\(ms($0)) (\(nsPerOp($0, options.n)))" }
            print("| \(fanout) | " + cells.joined(separator: " | ") + " |")
        }
        print("")
    }
}

if options.compare {
    let fanout = BTree<Int, Int>._defaultFanout
    let insertKeys = Array(intKeys.prefix(options.arrayInsertN))
    let tree = medians(runs: options.runs) { measureBTree(keys: intKeys, lookups: intLookups, fanout: fanout) }
    let dictionary = medians(runs: options.runs) { measureDictionary(keys: intKeys, lookups: intLookups) }
    let array = medians(runs: options.runs) {
        measureSortedArray(insertKeys: insertKeys, keys: intKeys, lookups: intLookups)
    }
    let scale = Double(options.n) / Double(options.arrayInsertN)
    let arrayInsertExtrapolated = array[0] * scale * scale
    print("## BTree<Int, Int> (default fanout \(fanout)) vs Dictionary vs sorted Array, n = \(options.n)")
    print("")
    print("| structure | insert | lookup | iterate | remove |")
    print("|---|---:|---:|---:|---:|")
    func row(_ name: String, _ m: [Double]) {
        print("| \(name) | " + m.map { "\(ms($0)) (\(nsPerOp($0, options.n)))" }.joined(separator: " | ") + " |")
    }
    row("BTree", tree)
    row("Dictionary", dictionary)
    print(
        "| sorted Array | ~\(ms(arrayInsertExtrapolated)) (~\(nsPerOp(arrayInsertExtrapolated, options.n))) extrapolated* | "
            + "\(ms(array[1])) (\(nsPerOp(array[1], options.n))) | \(ms(array[2])) (\(nsPerOp(array[2], options.n))) | n/a |"
    )
    print("")
    print(
        "\\* sorted Array insert measured at n = \(options.arrayInsertN): \(ms(array[0])) ms; "
            + "binary-search insert is O(n) per element (memmove), so the total is quadratic and "
            + "extrapolated by (\(options.n)/\(options.arrayInsertN))^2.")
    print("")
}
print("checksum \(checksum)")
