import Foundation
import Stowage

/// Parcels in two versions, for the migration crash test: V2 turns the weight in
/// kilograms (a number) into text and adds the weight in grams, which the stage's
/// didMigrate computes from each old record; its willMigrate first removes every parcel
/// whose code ends in 0. Each parcel has a label kept in a file of its own.
public enum ParcelV1: VersionedSchema {
    public static let versionIdentifier = Schema.Version(1, 0, 0)
    public static var models: [any PersistentModel.Type] { [Parcel.self] }

    @Model public final class Parcel {
        @Attribute(.unique) public var code: Int
        public var weight: Int
        @Attribute(.externalStorage) public var label: Data
        public init(code: Int, weight: Int) {
            self.code = code
            self.weight = weight
            self.label = ParcelV1.label(code)
        }
    }

    /// The label of parcel `code`.
    public static func label(_ code: Int) -> Data {
        Data((0..<(200 + code % 700)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ code) })
    }

    /// The weight of parcel `code`, in kilograms.
    public static func weight(_ code: Int) -> Int { 1 + code % 37 }
}

public enum ParcelV2: VersionedSchema {
    public static let versionIdentifier = Schema.Version(2, 0, 0)
    public static var models: [any PersistentModel.Type] { [Parcel.self] }

    @Model public final class Parcel {
        @Attribute(.unique) public var code: Int
        public var weight: String = ""
        public var grams: Int = 0
        @Attribute(.externalStorage) public var label: Data
        public init(code: Int, weight: String, grams: Int) {
            self.code = code
            self.weight = weight
            self.grams = grams
            self.label = ParcelV1.label(code)
        }
    }
}

public enum ParcelPlan: SchemaMigrationPlan {
    public static var schemas: [any VersionedSchema.Type] { [ParcelV1.self, ParcelV2.self] }
    public static var stages: [MigrationStage] { [stage] }
    public static let stage = MigrationStage.custom(
        fromVersion: ParcelV1.self, toVersion: ParcelV2.self,
        willMigrate: { context in
            try context.delete(model: ParcelV1.Parcel.self, where: #Predicate { $0.code % 10 == 0 })
            try context.save()
        },
        didMigrate: { context in
            try context.enumerate(FetchDescriptor<ParcelV2.Parcel>(), batchSize: 500, allowEscapingMutations: true) {
                parcel in
                if let old = try? context.valuesBeforeMigration(of: parcel, as: ParcelV1.Parcel.self) {
                    parcel.weight = "\(old.weight) kg"
                    parcel.grams = old.weight * 1000
                }
            }
            try context.save()
        })
}
