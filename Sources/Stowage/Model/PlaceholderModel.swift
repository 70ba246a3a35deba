import Foundation
import Observation

/// The model ``ModelContext/model(for:)`` returns for an identifier whose entity the
/// schema lacks. It has no properties.
final class _PlaceholderModel: PersistentModel {
    var persistentBackingData: ModelBackingData
    static var schemaMetadata: [Schema.PropertyMetadata] { [] }
    init(backingData: ModelBackingData) { persistentBackingData = backingData }
}
