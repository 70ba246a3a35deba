import Foundation
import StowageTestSupport

// Writes the seed corpus when asked (`--write-seeds <directory>`), and otherwise hands the
// process to libFuzzer's driver with this target's entry point.
if let directory = FuzzSamples.seedDirectory {
    FuzzSamples.writeSeeds(jsonOpenSeeds(), to: directory)
    exit(0)
}
exit(FuzzDriver.run(fuzzJSONOpen))
