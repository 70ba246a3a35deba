import BTree
import Testing

typealias IntTree = BTree<Int, Int>

/// Flattens a sequence of key-value pairs into `[key, value, key, value, ...]`,
/// which is Equatable and prints compactly.
func flat<S: Sequence>(_ elements: S) -> [Int] where S.Element == (key: Int, value: Int) {
    var result: [Int] = []
    for element in elements {
        result.append(element.key)
        result.append(element.value)
    }
    return result
}

/// Checks the full contents and structure of `tree` against `model`.
func expectMatches(
    _ tree: IntTree, _ model: SortedArrayModel, _ context: @autoclosure () -> String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let violations = tree._invariantViolations()
    #expect(violations.isEmpty, "\(context()): \(violations)", sourceLocation: sourceLocation)
    #expect(tree.count == model.count, "\(context()): count", sourceLocation: sourceLocation)
    #expect(tree.isEmpty == (model.count == 0), "\(context()): isEmpty", sourceLocation: sourceLocation)
    #expect(flat(tree) == flat(model.elements), "\(context()): contents", sourceLocation: sourceLocation)
    #expect(tree.first?.key == model.elements.first?.key, "\(context()): first", sourceLocation: sourceLocation)
    #expect(tree.last?.key == model.elements.last?.key, "\(context()): last", sourceLocation: sourceLocation)
}
