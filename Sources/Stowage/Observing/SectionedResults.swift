import Foundation

/// Results grouped into sections: a collection of ``ResultsSection``s in the order of the
/// results, each holding the consecutive models that share a section title.
public struct SectionedResults<Element: PersistentModel, SectionTitle: Hashable>: RandomAccessCollection {
    private let sections: [ResultsSection<Element, SectionTitle>]
    private let positions: [SectionTitle: Int]

    /// Groups `results`, whose entries sort by the section key first, by the title
    /// `title` makes of each entry's first sort key.
    /// - Complexity: O(*s* log *n*) for *s* sections of *n* models: each section's end is
    ///   found by binary search.
    init(
        results: FetchResultsCollection<Element>, entries: OrderedEntries,
        title: (SnapshotValue) -> SectionTitle
    ) {
        var sections: [ResultsSection<Element, SectionTitle>] = []
        var positions: [SectionTitle: Int] = [:]
        var start = 0
        let count = entries.count
        while start < count {
            let key = entries[start].keys[0]
            // The first position whose key differs: keys are sorted, so equal ones are together.
            var low = start + 1
            var high = count
            while low < high {
                let mid = (low + high) / 2
                if SnapshotValue.compare(entries[mid].keys[0], key) == .orderedSame {
                    low = mid + 1
                } else {
                    high = mid
                }
            }
            let name = title(key)
            // `nil` and `""` make the same title, and sort next to each other.
            if let last = sections.last, last.title == name {
                sections[sections.count - 1] = ResultsSection(
                    title: name, results: results, range: last.range.lowerBound..<low)
            } else {
                positions[name] = sections.count
                sections.append(ResultsSection(title: name, results: results, range: start..<low))
            }
            start = low
        }
        self.sections = sections
        self.positions = positions
    }

    /// The position of the first section: 0.
    public var startIndex: Int { 0 }
    /// The number of sections.
    public var endIndex: Int { sections.count }
    /// The section at `position`, in the order of the results.
    public subscript(position: Int) -> ResultsSection<Element, SectionTitle> { sections[position] }

    /// The section titles, in order.
    public var sectionTitles: [SectionTitle] { sections.map(\.title) }

    /// The section titled `title`, or `nil` when no model has that title.
    /// - Complexity: O(1).
    public subscript(sectionTitle title: SectionTitle) -> ResultsSection<Element, SectionTitle>? {
        positions[title].map { sections[$0] }
    }

    /// The position of the section titled `title`, or `nil`.
    /// - Complexity: O(1).
    public func index(ofSectionTitled title: SectionTitle) -> Int? { positions[title] }
}

/// The models of one section of ``SectionedResults``: those that share ``title``, in the
/// order of the results, loaded as they are read.
public struct ResultsSection<Element: PersistentModel, SectionTitle: Hashable>: RandomAccessCollection, Identifiable {
    /// The value of the section key that the section's models share.
    public let title: SectionTitle
    let results: FetchResultsCollection<Element>
    /// The section's positions in the results.
    let range: Range<Int>

    init(title: SectionTitle, results: FetchResultsCollection<Element>, range: Range<Int>) {
        self.title = title
        self.results = results
        self.range = range
    }

    /// The section's title.
    public var id: SectionTitle { title }
    /// The position of the section's first model: 0.
    public var startIndex: Int { 0 }
    /// The number of models in the section.
    public var endIndex: Int { range.count }
    /// The section's model at `position`, loaded if it was not yet.
    public subscript(position: Int) -> Element { results[range.lowerBound + position] }
}
