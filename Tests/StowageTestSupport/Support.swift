import Stowage
