import Foundation
import StowageTestSupport
import Testing

/// The test cluster starts, and the databases it makes accept connections.
@Suite struct PostgresTestClusterTests {
    @Test func freshDatabasesAcceptConnections() throws {
        guard let cluster = try PostgresTestCluster.shared() else {
            print("PostgresTestClusterTests skipped: \(PostgresTestCluster.unavailableReason ?? "no PostgreSQL")")
            return
        }
        let first = try cluster.freshDatabase()
        let second = try cluster.freshDatabase()
        #expect(first != second)
        let answers = try [first, second].map { try cluster.psql(uri: $0, command: "select 1, current_database()") }
        #expect(answers.allSatisfy { $0.hasPrefix("1|t_") })
        #expect(answers[0] != answers[1])
    }
}
