import Foundation

extension LogStore {
    /// What opening found when the end of the log was torn or damaged.
    public struct RecoveryReport: Sendable, Hashable, CustomStringConvertible {
        /// The bytes kept: the file's length after recovery, or, when ``leftInFile``, the
        /// length of the prefix that was read.
        public let validLength: Int64
        /// The bytes cut off the end, or, when ``leftInFile``, left unread at the end.
        public let droppedBytes: Int64
        /// What was wrong at `validLength`.
        public let reason: String
        /// The commits replayed from the valid prefix.
        public let commitsReplayed: Int
        /// Whether the dropped bytes are still in the file: a store opened read-only
        /// (``LogStoreConfiguration/allowsSave`` `false`) reads the valid prefix and cuts
        /// nothing. The next store to open the file for writing cuts them off. Stowage's
        /// addition.
        public let leftInFile: Bool

        init(validLength: Int64, droppedBytes: Int64, reason: String, commitsReplayed: Int, leftInFile: Bool = false) {
            self.validLength = validLength
            self.droppedBytes = droppedBytes
            self.reason = reason
            self.commitsReplayed = commitsReplayed
            self.leftInFile = leftInFile
        }

        /// What opening kept and dropped, and why, as one line.
        public var description: String {
            leftInFile
                ? "read \(validLength) bytes (\(commitsReplayed) commits), ignored the last \(droppedBytes), "
                    + "left in the file (read-only): \(reason)"
                : "kept \(validLength) bytes (\(commitsReplayed) commits), dropped \(droppedBytes): \(reason)"
        }
    }
}
