import Foundation
import Stowage
import StowagePostgres
import StowageTestSupport

/// The query differential (`FuzzQueries`) on `PostgresStore`: the input as a stream of
/// choices that make one query (`RandomQueries`), run on a PostgreSQL database that holds
/// the same rows as the other stores do there, in a throwaway cluster the process starts
/// (`PostgresTestCluster`; stopped when the process ends). The property is the same: the
/// store's result and count equal a plain-Swift evaluation of the predicate over the rows,
/// and a fetch that throws is a finding.
func fuzzQueriesPostgres(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    let problems = harness.check(bytes)
    guard problems.isEmpty else {
        fatalError("PostgresStore disagrees with the evaluation:\n" + problems.joined(separator: "\n"))
    }
    return 0
}

/// The cluster, or `nil` with the reason there is none.
let cluster: Result<PostgresTestCluster?, any Error> = Result { try PostgresTestCluster.shared() }

/// The store and its rows, made once per process on a fresh database of the cluster.
nonisolated(unsafe) let harness: RandomQueries.Harness = {
    do {
        guard let cluster = try cluster.get() else {
            fatalError("no PostgreSQL cluster: \(PostgresTestCluster.unavailableReason ?? "?")")
        }
        let factory = StoreFactory(name: "PostgresStore") { schema in
            try ModelContainer(
                for: schema,
                configurations: [
                    PostgresStoreConfiguration(name: "postgres", schema: schema, url: try cluster.freshDatabase())
                ])
        }
        return try RandomQueries.Harness(stores: [factory])
    } catch {
        fatalError("the PostgreSQL query fuzzer's store could not be made: \(error)")
    }
}()
