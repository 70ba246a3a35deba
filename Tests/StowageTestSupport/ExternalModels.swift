import Foundation
import Stowage

/// A model with external-storage attributes, for the log store's external values.
@Model
public final class Photo {
    @Attribute(.unique) public var title: String
    public var caption: String = ""
    @Attribute(.externalStorage) public var bytes: Data
    @Attribute(.externalStorage) public var thumbnail: Data?

    public init(title: String, bytes: Data, thumbnail: Data? = nil) {
        self.title = title
        self.bytes = bytes
        self.thumbnail = thumbnail
    }
}
