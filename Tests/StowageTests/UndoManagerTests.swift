import Foundation
import Stowage
import Synchronization
import Testing

#if !canImport(ObjectiveC)
    /// Stowage's `UndoManager`, which Linux's Foundation lacks, against Foundation's
    /// documented behaviour: groups, nesting, the redo stack, registration while undoing
    /// and redoing, limits and names.
    @Suite("UndoManager")
    struct UndoManagerTests {
        final class Counter {
            var value = 0
            let undo: UndoManager
            init(_ undo: UndoManager) { self.undo = undo }

            func set(_ new: Int) {
                let old = value
                undo.registerUndo(withTarget: self) { $0.set(old) }
                value = new
            }
        }

        @Test func aGroupUndoesAndRedoesAsOne() {
            let undo = UndoManager()
            undo.groupsByEvent = false
            let counter = Counter(undo)
            undo.beginUndoGrouping()
            counter.set(1)
            counter.set(2)
            undo.setActionName("Count")
            undo.endUndoGrouping()
            #expect(undo.canUndo && !undo.canRedo)
            #expect(undo.undoActionName == "Count")
            undo.undo()
            #expect(counter.value == 0)
            #expect(undo.canRedo && !undo.canUndo)
            #expect(undo.redoActionName == "Count")
            undo.redo()
            #expect(counter.value == 2)
            #expect(undo.canUndo && !undo.canRedo)
            undo.undo()
            #expect(counter.value == 0)
        }

        @Test func aRegistrationOutsideAGroupOpensOneThatUndoCloses() {
            let undo = UndoManager()
            let counter = Counter(undo)
            counter.set(5)
            #expect(undo.groupingLevel == 1)
            #expect(undo.canUndo)
            counter.set(6)
            undo.undo()
            #expect(counter.value == 0)
            #expect(undo.groupingLevel == 0)
            // Without groupsByEvent nothing is recorded outside a group.
            undo.groupsByEvent = false
            counter.set(9)
            #expect(!undo.canUndo)
        }

        @Test func aNewChangeClearsTheRedoStackButARedoDoesNot() {
            let undo = UndoManager()
            undo.groupsByEvent = false
            let counter = Counter(undo)
            for n in 1...3 {
                undo.beginUndoGrouping()
                counter.set(n)
                undo.endUndoGrouping()
            }
            undo.undo()
            undo.undo()
            #expect(counter.value == 1)
            undo.redo()
            #expect(counter.value == 2 && undo.canRedo)
            undo.beginUndoGrouping()
            counter.set(7)
            undo.endUndoGrouping()
            #expect(!undo.canRedo)
            undo.undo()
            undo.undo()
            #expect(counter.value == 1)
        }

        @Test func nestedGroupsUndoWithTheirTopLevelGroup() {
            let undo = UndoManager()
            undo.groupsByEvent = false
            let counter = Counter(undo)
            undo.beginUndoGrouping()
            counter.set(1)
            undo.beginUndoGrouping()
            counter.set(2)
            #expect(undo.groupingLevel == 2)
            undo.undo()  // inside a nested group: nothing, as Foundation refuses it
            #expect(counter.value == 2)
            undo.endUndoGrouping()
            undo.endUndoGrouping()
            undo.endUndoGrouping()  // none open: nothing
            undo.undo()
            #expect(counter.value == 0)
            undo.redo()
            #expect(counter.value == 2)
        }

        @Test func limitsDisablingAndRemoval() {
            let undo = UndoManager()
            undo.groupsByEvent = false
            undo.levelsOfUndo = 2
            let counter = Counter(undo)
            for n in 1...4 {
                undo.beginUndoGrouping()
                counter.set(n)
                undo.endUndoGrouping()
            }
            undo.undo()
            undo.undo()
            undo.undo()
            #expect(counter.value == 2)
            undo.disableUndoRegistration()
            #expect(!undo.isUndoRegistrationEnabled)
            undo.beginUndoGrouping()
            counter.set(10)
            undo.endUndoGrouping()
            undo.enableUndoRegistration()
            #expect(!undo.canUndo)
            undo.beginUndoGrouping()
            counter.set(11)
            undo.endUndoGrouping()
            undo.removeAllActions(withTarget: counter)
            #expect(!undo.canUndo && !undo.canRedo)
        }

        @Test func undoingAndRedoingAreVisibleToTheActionsAndNotified() {
            let undo = UndoManager()
            undo.groupsByEvent = false
            final class Probe {
                var seen: [String] = []
            }
            let probe = Probe()
            undo.beginUndoGrouping()
            undo.registerUndo(withTarget: probe) { [undo] probe in
                probe.seen.append(undo.isUndoing ? "undoing" : "other")
                undo.registerUndo(withTarget: probe) { probe in
                    probe.seen.append(undo.isRedoing ? "redoing" : "other")
                }
            }
            undo.endUndoGrouping()
            let heard = PosixMutex(0)
            let observer = NotificationCenter.default.addObserver(
                forName: .NSUndoManagerDidUndoChange, object: undo, queue: nil
            ) { _ in heard.withLock { $0 += 1 } }
            defer { NotificationCenter.default.removeObserver(observer) }
            undo.undo()
            undo.redo()
            #expect(probe.seen == ["undoing", "redoing"])
            #expect(heard.withLock { $0 } == 1)
        }
    }
#endif
