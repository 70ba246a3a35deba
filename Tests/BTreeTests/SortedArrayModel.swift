/// The reference model: a sorted array of unique keys with values.
struct SortedArrayModel {
    var elements: [(key: Int, value: Int)] = []

    var count: Int { elements.count }

    /// First position whose key is >= key.
    func lowerBound(_ key: Int) -> Int {
        var low = 0
        var high = elements.count
        while low < high {
            let mid = (low + high) / 2
            if elements[mid].key < key { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// First position whose key is > key.
    func upperBound(_ key: Int) -> Int {
        var low = 0
        var high = elements.count
        while low < high {
            let mid = (low + high) / 2
            if elements[mid].key <= key { low = mid + 1 } else { high = mid }
        }
        return low
    }

    func value(forKey key: Int) -> Int? {
        let i = lowerBound(key)
        return i < elements.count && elements[i].key == key ? elements[i].value : nil
    }

    mutating func updateValue(_ value: Int, forKey key: Int) -> Int? {
        let i = lowerBound(key)
        if i < elements.count && elements[i].key == key {
            let old = elements[i].value
            elements[i].value = value
            return old
        }
        elements.insert((key, value), at: i)
        return nil
    }

    mutating func insert(_ value: Int, forKey key: Int) -> (inserted: Bool, existing: Int?) {
        let i = lowerBound(key)
        if i < elements.count && elements[i].key == key {
            return (false, elements[i].value)
        }
        elements.insert((key, value), at: i)
        return (true, nil)
    }

    mutating func removeValue(forKey key: Int) -> Int? {
        let i = lowerBound(key)
        guard i < elements.count && elements[i].key == key else { return nil }
        return elements.remove(at: i).value
    }

    var keys: [Int] { elements.map(\.key) }
    var values: [Int] { elements.map(\.value) }
}
