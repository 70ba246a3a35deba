import Foundation
import StowageTestSupport

// Hands the process to libFuzzer's driver, with this target's entry point.
exit(FuzzDriver.run(fuzzLogOpen))
