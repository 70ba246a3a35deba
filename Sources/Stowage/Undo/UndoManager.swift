import Foundation

#if !canImport(ObjectiveC)
    /// An undo manager with Foundation's names and semantics, for platforms whose
    /// Foundation has none: swift-corelibs-foundation on Linux has no `UndoManager`.
    ///
    /// It keeps an undo stack and a redo stack of groups of actions. An action registered
    /// while the manager undoes goes on the redo stack; one registered while it redoes, on
    /// the undo stack; any other clears the redo stack, as in Foundation.
    ///
    /// Where it differs, because there is no run loop to group by: with ``groupsByEvent``
    /// (the default), an action registered outside any group opens a top-level group, which
    /// stays open until ``endUndoGrouping()`` closes it; ``undo()`` closes it first, and a
    /// model context's `processPendingChanges()` closes it too. Where Foundation raises an
    /// exception (ending a group none opened, `undo()` inside a nested group), this
    /// manager does nothing. Stowage's own type on Linux; on Apple platforms Foundation's
    /// is used.
    open class UndoManager {
        /// One group: its actions in the order they were registered, or nested groups.
        final class Group {
            var actions: [Action] = []
            var actionName = ""
            var isEmpty: Bool { actions.isEmpty }
        }

        enum Action {
            case call(target: Weak, handler: (AnyObject) -> Void)
            case group(Group)
        }

        final class Weak {
            weak var object: AnyObject?
            init(_ object: AnyObject) { self.object = object }
        }

        private var undoStack: [Group] = []
        private var redoStack: [Group] = []
        /// The groups open now, outermost first.
        private var open: [Group] = []
        /// Whether the open top-level group was opened by a registration (``groupsByEvent``).
        private var openedImplicitly = false
        private var disabledCount = 0
        /// Where registrations go while undoing or redoing.
        private var collecting: Group?

        /// Whether the manager is performing an undo.
        open private(set) var isUndoing = false
        /// Whether the manager is performing a redo.
        open private(set) var isRedoing = false
        /// Whether a registration outside any group opens one (see the type's notes).
        open var groupsByEvent = true
        /// The most top-level undo groups kept; 0, the default, keeps them all.
        open var levelsOfUndo = 0 {
            didSet { trim() }
        }

        /// An undo manager with nothing to undo, registration on and no limit of levels.
        public init() {}

        /// How many groups are open.
        open var groupingLevel: Int { open.count }

        /// Whether registration is on: each ``disableUndoRegistration()`` must be matched
        /// by an ``enableUndoRegistration()``.
        open var isUndoRegistrationEnabled: Bool { disabledCount == 0 }

        /// Stops recording registered actions until a matching ``enableUndoRegistration()``.
        open func disableUndoRegistration() { disabledCount += 1 }

        /// Undoes one ``disableUndoRegistration()``; registration resumes once every one is
        /// matched.
        open func enableUndoRegistration() { disabledCount = max(0, disabledCount - 1) }

        /// Whether there is a group to undo (an open group with actions counts: ``undo()``
        /// closes it first).
        open var canUndo: Bool {
            !undoStack.isEmpty || (open.count == 1 && !open[0].isEmpty)
        }

        /// Whether there is a group to redo.
        open var canRedo: Bool { !redoStack.isEmpty }

        /// Opens a group; groups nest.
        open func beginUndoGrouping() {
            post(.NSUndoManagerCheckpoint)
            open.append(Group())
            post(.NSUndoManagerDidOpenUndoGroup)
        }

        /// Closes the innermost open group: a top-level group goes on the undo stack (when it
        /// holds actions), a nested one into the group around it.
        open func endUndoGrouping() {
            guard let group = open.last else { return }
            post(.NSUndoManagerCheckpoint)
            post(.NSUndoManagerDidCloseUndoGroup)
            open.removeLast()
            if open.isEmpty { openedImplicitly = false }
            guard !group.isEmpty else { return }
            if let outer = open.last {
                outer.actions.append(.group(group))
            } else {
                undoStack.append(group)
                trim()
            }
        }

        /// Records an action that undoes a change to `target`. The target is not retained:
        /// an action whose target is gone is skipped.
        open func registerUndo<TargetType: AnyObject>(
            withTarget target: TargetType, handler: @escaping (TargetType) -> Void
        ) {
            guard disabledCount == 0 else { return }
            let action = Action.call(target: Weak(target)) { object in
                if let typed = object as? TargetType { handler(typed) }
            }
            if let collecting {
                collecting.actions.append(action)
                return
            }
            if open.isEmpty {
                guard groupsByEvent else { return }
                beginUndoGrouping()
                openedImplicitly = true
            }
            open[open.count - 1].actions.append(action)
            redoStack.removeAll()
        }

        /// Closes the top-level group if it is the only one open, then undoes the last group.
        open func undo() {
            if open.count == 1 { endUndoGrouping() }
            guard open.isEmpty else { return }
            undoNestedGroup()
        }

        /// Undoes the last closed group on the undo stack; what the undo registers becomes
        /// a group on the redo stack.
        open func undoNestedGroup() {
            guard open.isEmpty, let group = undoStack.popLast() else { return }
            post(.NSUndoManagerCheckpoint)
            post(.NSUndoManagerWillUndoChange)
            isUndoing = true
            let redo = replay(group)
            isUndoing = false
            if !redo.isEmpty { redoStack.append(redo) }
            post(.NSUndoManagerDidUndoChange)
        }

        /// Redoes the last undone group; what the redo registers goes back on the undo stack.
        open func redo() {
            guard open.isEmpty, let group = redoStack.popLast() else { return }
            post(.NSUndoManagerCheckpoint)
            post(.NSUndoManagerWillRedoChange)
            isRedoing = true
            let undo = replay(group)
            isRedoing = false
            if !undo.isEmpty {
                undoStack.append(undo)
                trim()
            }
            post(.NSUndoManagerDidRedoChange)
        }

        /// Performs `group`'s actions, last first, and returns the group of what they
        /// registered, under the same action name.
        private func replay(_ group: Group) -> Group {
            let opposite = Group()
            opposite.actionName = group.actionName
            perform(group, collectingInto: opposite)
            return opposite
        }

        /// Forgets every action, and closes every open group.
        open func removeAllActions() {
            undoStack.removeAll()
            redoStack.removeAll()
            open.removeAll()
            openedImplicitly = false
        }

        /// Forgets the actions registered with `target`.
        open func removeAllActions(withTarget target: Any) {
            let object = target as AnyObject
            func strip(_ group: Group) {
                group.actions.removeAll { action in
                    switch action {
                    case .call(let weak, _): return weak.object === object
                    case .group(let inner):
                        strip(inner)
                        return inner.isEmpty
                    }
                }
            }
            for group in undoStack + redoStack + open { strip(group) }
            undoStack.removeAll { $0.isEmpty }
            redoStack.removeAll { $0.isEmpty }
        }

        /// Names the action of the open group (or of the last closed one, when none is open).
        open func setActionName(_ actionName: String) {
            (open.last ?? undoStack.last)?.actionName = actionName
        }

        /// The name of the group ``undo()`` would undo.
        open var undoActionName: String { (open.count == 1 ? open[0] : undoStack.last)?.actionName ?? "" }

        /// The name of the group ``redo()`` would redo.
        open var redoActionName: String { redoStack.last?.actionName ?? "" }

        /// Whether the top-level group open now was opened by a registration, so that the
        /// caller that marks the end of an event (a model context's
        /// `processPendingChanges()`) closes it.
        var hasImplicitGroupOpen: Bool { openedImplicitly && open.count == 1 }

        /// Closes the top-level group a registration opened, if one is open.
        func closeImplicitGroup() {
            if hasImplicitGroupOpen { endUndoGrouping() }
        }

        private func perform(_ group: Group, collectingInto target: Group) {
            let saved = collecting
            collecting = target
            defer { collecting = saved }
            for action in group.actions.reversed() {
                switch action {
                case .call(let weak, let handler):
                    if let object = weak.object { handler(object) }
                case .group(let inner):
                    let nested = Group()
                    perform(inner, collectingInto: nested)
                    if !nested.isEmpty { target.actions.append(.group(nested)) }
                }
            }
        }

        private func trim() {
            if levelsOfUndo > 0, undoStack.count > levelsOfUndo {
                undoStack.removeFirst(undoStack.count - levelsOfUndo)
            }
        }

        private func post(_ name: Notification.Name) {
            NotificationCenter.default.post(name: name, object: self)
        }
    }

    extension Notification.Name {
        /// Posted when a group opens or closes, and before an undo or redo.
        public static let NSUndoManagerCheckpoint = Notification.Name("NSUndoManagerCheckpointNotification")
        /// Posted before ``UndoManager/undo()`` undoes a group.
        public static let NSUndoManagerWillUndoChange = Notification.Name("NSUndoManagerWillUndoChangeNotification")
        /// Posted before ``UndoManager/redo()`` redoes a group.
        public static let NSUndoManagerWillRedoChange = Notification.Name("NSUndoManagerWillRedoChangeNotification")
        /// Posted after ``UndoManager/undo()`` undid a group.
        public static let NSUndoManagerDidUndoChange = Notification.Name("NSUndoManagerDidUndoChangeNotification")
        /// Posted after ``UndoManager/redo()`` redid a group.
        public static let NSUndoManagerDidRedoChange = Notification.Name("NSUndoManagerDidRedoChangeNotification")
        /// Posted after a group opens.
        public static let NSUndoManagerDidOpenUndoGroup = Notification.Name(
            "NSUndoManagerDidOpenUndoGroupNotification")
        /// Posted after a group closes.
        public static let NSUndoManagerDidCloseUndoGroup = Notification.Name(
            "NSUndoManagerDidCloseUndoGroupNotification")
    }
#endif
