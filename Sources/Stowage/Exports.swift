// A SwiftData model file compiles with `import SwiftData` replaced by `import Stowage`;
// SwiftData makes Foundation and Observation visible, and the code `@Model` writes uses
// Observation's registrar, so Stowage re-exports both.
@_exported import Foundation
@_exported import Observation
