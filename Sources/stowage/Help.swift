/// The command specifications and their `--help` texts.
enum Help {
    static let specs: [String: CommandSpec] = [
        "inspect": CommandSpec(name: "inspect", flags: ["--json", "--map"], options: ["--width": nil]),
        "verify": CommandSpec(name: "verify", flags: ["--json"], options: [:]),
        "dump": CommandSpec(
            name: "dump", flags: [], options: ["--entity": nil, "--format": ["jsonl", "table"]]),
        "history": CommandSpec(name: "history", flags: ["--json"], options: [:]),
        "recover": CommandSpec(name: "recover", flags: [], options: ["--backup": nil]),
        "compact": CommandSpec(name: "compact", flags: [], options: [:]),
    ]

    static let exitStatus = """
        EXIT STATUS:
          0  ok (for verify: the store is healthy)
          1  damaged or failed: the store is damaged, is not a Stowage store, cannot be
             read or written, or is open in another process
          2  usage: an unknown command or option, a missing PATH, an unknown --entity
        """

    static let overview = """
        OVERVIEW: inspect, check, dump and repair Stowage store files

        USAGE: stowage <command> [options] PATH

        PATH is a log store (a LogStore file, which starts with "STOWLOG") or a JSON store
        (a stowage-json document); the tool tells them apart by their first bytes and
        refuses any other file. It needs no model types: the schema comes from the file.

        COMMANDS:
          inspect   The format, the schema, record counts, and the log's space use
          verify    A full integrity check: exit status 0 means healthy
          dump      Every live record, as JSON lines or tables
          history   The log's commits: time, author, inserts, updates, deletes
          recover   Cut a damaged log back to its longest valid prefix, after a backup
          compact   Rewrite a log without its dead records

        Only recover and compact ever write to a store, and both take its lock first.

        \(exitStatus)

        Run 'stowage <command> --help' for a command's options.
        """

    static let texts: [String: String] = [
        "inspect": """
        OVERVIEW: show what a store file holds

        USAGE: stowage inspect [--json] [--map [--width N]] PATH

        Prints the format and its version, the file size, the store identifier, the schema
        (version; entities with their properties and types, relationships, uniqueness
        constraints and indexes), the live records per entity and the next primary key.
        For a log store also: the commits (the last one's time and author), in format
        versions 4 and 5 the blocks that hold the commits' writes (and how many hold LZ4
        bytes: in version 4 a block is compressed whole, in version 5 each write on its own),
        the checkpoints (the last one's offset and the transaction it covers), live and dead
        bytes, and the compression ratio. Reads only; the file is not changed.

        Live and dead bytes (log store): a commit record none of whose writes is still the
        current version of a live record is dead in full, frame included. A commit that
        still holds a live version is live, except for the share of its bytes (rounded
        down) that its superseded writes and delete entries take up in its uncompressed
        payload (in versions 4 and 5, with its blocks decompressed). The last checkpoint record
        (format versions 3 to 5) is live, every earlier one dead. The file header and the
        header record are live. Bytes after the valid prefix (a torn or damaged tail) are
        neither: they are reported as damaged. Compaction keeps about the live bytes. The
        compression ratio is the records' payload bytes (versions 4 and 5: with the commits'
        blocks decompressed) over the bytes they take in the file.

        OPTIONS:
          --json       Print one JSON object instead of text
          --map        Also draw the log as a strip, one character per stretch of the
                       file: H header, # live, . dead, C checkpoint, ! damaged,
                       _ zeros a store reserved after its last record
          --width N    The strip's width in characters (default 64)
          -h, --help   Show this help

        \(exitStatus)
          inspect exits 1 when the file is damaged (what it prints then describes the
          valid part before the damage).
        """,
        "verify": """
        OVERVIEW: check a store file's integrity

        USAGE: stowage verify [--json] PATH

        Log store: every record's framing, length and checksum (CRC32C) and every LZ4
        payload, in file order; that every commit decodes; that every snapshot written
        fits the stored schema (value count; null only where optional; the value's kind
        for String, Bool, the integer widths and their ranges, Double, Date, Data, UUID,
        URL, Decimal and arrays of them; relationships hold identifiers of their
        destination); transaction identifiers in order; keys below the commit's next
        primary key.
        JSON store: the document parses, and every member, record and value fits the
        schema it holds, as opening the store checks.
        Both: every relationship of a live record points at a live record of its
        destination (a reference left behind by the .noAction delete rule counts as
        damage), and the indexes agree with the data: every index and uniqueness group
        names properties the entity has, every indexed value encodes as an index key that
        decodes again, and no two live records share the values of a uniqueness constraint.
        Log format versions 3 and 4 also persist index entries, in checkpoint records: every
        checkpoint decodes against the stored schema and agrees with the records the
        commits before it leave (the same transaction identifier and next primary key, the
        same live keys per entity, and for each index exactly the entries computed from the
        live records, key bytes and primary keys, in ascending key order).
        Log format versions 4 and 5 keep each commit's writes in blocks: every block's header,
        lengths (in version 5 its table of writes), checksum and LZ4 bytes are checked and
        its writes decoded, and a commit record compressed as a whole is damage (a version
        4 or 5 commit is stored raw). Its
        checkpoints also count the record versions (every write and delete before them)
        and hold the key directory (where each live record is: block offset and slot);
        both must agree with what the commits before the checkpoint leave (the location of
        each live key's last write).

        Prints "healthy", or "damaged" with the first bad offset and what is wrong there,
        then every problem found. Reads only; the file is not changed.

        OPTIONS:
          --json       Print one JSON object instead of text
          -h, --help   Show this help

        \(exitStatus)
          verify exits 0 only when the store is healthy.
        """,
        "dump": """
        OVERVIEW: print every live record

        USAGE: stowage dump [--entity NAME] [--format jsonl|table] PATH

        One JSON object per line (jsonl, the default), entities in schema order and records
        in primary-key order:
          {"entity": "Trip", "id": 3, "values": {"name": "Oslo", "items": [4, 5], ...}}
        Values use the JSON store's mapping (Formats/json.md): numbers, strings, booleans
        and null as themselves; dates, UUIDs, URLs, data, decimals and unsigned integers
        tagged ({"$date": "2026-01-01T00:00:00.000Z"}); relationships as the primary keys
        of their destination. A value kept outside a version 2 log (.externalStorage) is
        shown as {"$external": {"file": NAME, "bytes": N}}, NAME inside PATH.blobs/. A
        damaged log is dumped up to the damage, with exit status 1.
        Reads only; the file is not changed.

        OPTIONS:
          --entity NAME         Only the records of this entity
          --format jsonl|table  JSON lines (default), or one table per entity
          -h, --help            Show this help

        \(exitStatus)
        """,
        "history": """
        OVERVIEW: list a log store's commits

        USAGE: stowage history [--json] PATH

        One line per commit record, in file order: its transaction identifier, time (UTC),
        author, and counts of inserts, updates and deletes, with its offset and size in the
        file, and "lz4" when the commit is stored compressed (format versions 4 and 5: when
        one of its blocks holds LZ4 bytes; --json also gives each commit's blocks). A compacted log holds the
        live records as inserts in commits that carry the last transaction identifier. A
        JSON store keeps no history: every save replaces the whole document. Reads only;
        the file is not changed.

        OPTIONS:
          --json       Print one JSON object instead of text
          -h, --help   Show this help

        \(exitStatus)
        """,
        "recover": """
        OVERVIEW: bring a damaged log back to its longest valid prefix

        USAGE: stowage recover [--backup FILE] PATH

        Takes the store's lock (PATH.lock), reads the log, and if a record is torn or
        damaged at offset X: copies the whole file to a backup first (synced), then cuts the
        log to its first X bytes and syncs it, the same point-in-time recovery that opening
        the store performs. Prints the bytes kept and dropped and the backup's path. A whole
        log is not written. A log whose file header or header record is damaged cannot be
        recovered and is left untouched. A JSON store is never changed: one that does not
        parse or does not fit its schema is left untouched, and recover says where it breaks.

        OPTIONS:
          --backup FILE   Where to copy the original (default PATH.bak-<UTC time>); the
                          file must not exist
          -h, --help      Show this help

        \(exitStatus)
          recover exits 0 when the log is whole or was recovered.
        """,
        "compact": """
        OVERVIEW: rewrite a log without its dead records

        USAGE: stowage compact PATH

        Takes the store's lock (PATH.lock), then writes the live records, as inserts in
        commits of about 4 MiB carrying the last transaction identifier, to PATH.compact
        with a new salt and generation + 1; syncs it, reads it back and compares its records
        with the original's, renames it over PATH and syncs the directory, as the store's
        own compaction does (Formats/log.md). A crash leaves the old file or the new one.
        Prints the size before and after, with a progress bar when standard output is a
        terminal. A damaged log is refused (run recover first). A JSON store holds no dead
        records and is not rewritten.

        The log keeps its format version; a version 4 or 5 log's commits keep their writes
        in blocks, as the store writes them. A version 3, 4 or 5 log is rewritten without a
        checkpoint record (checkpoints are optional): the store builds its indexes (and, in
        versions 4 and 5, its key directory) from the records the next
        time it opens the file, and writes a checkpoint again when it compacts, when
        checkpoint() is called, or when it is closed with at least minimumCommitBytes of
        commits in the file (1 MiB by default).

        OPTIONS:
          -h, --help   Show this help

        \(exitStatus)
        """,
    ]
}
