import Foundation
import StowageTestSupport

// Writes the seed corpus when asked (`--write-seeds <directory>`: none of its own, the
// input is `FuzzQueries`' and `Scripts/fuzz` runs it on that target's corpus). Without
// PostgreSQL's programs it says why in one line and ends without fuzzing; otherwise it
// starts the cluster and hands the process to libFuzzer's driver.
if FuzzSamples.seedDirectory != nil { exit(0) }
switch cluster {
case .success(nil):
    print("FuzzQueriesPostgres skipped: \(PostgresTestCluster.unavailableReason ?? "no PostgreSQL cluster")")
    exit(0)
case .failure(let error):
    print("FuzzQueriesPostgres: the PostgreSQL cluster did not start: \(error)")
    exit(1)
case .success:
    _ = harness
    exit(FuzzDriver.run(fuzzQueriesPostgres))
}
