//! The SQLite dialect of each migration of [`super::MIGRATIONS`], named by its version.
//! Released text is never edited: a database records only the version it applied.

pub(super) const V1_INITIAL: &str = r#"
CREATE TABLE runs (
    id                INTEGER PRIMARY KEY,
    kind              TEXT NOT NULL,            -- chat | routine | heartbeat | greeting
    routine           TEXT,
    trigger           TEXT NOT NULL,
    scheduled_for     TEXT,
    status            TEXT NOT NULL,
    started_at        TEXT,
    finished_at       TEXT,
    output            TEXT,
    error             TEXT,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    iterations        INTEGER NOT NULL DEFAULT 0,
    created_at        TEXT NOT NULL,
    -- NULLs never collide, so manual and chat runs (no scheduled_for) coexist.
    UNIQUE (routine, scheduled_for)
);
CREATE INDEX runs_created_at ON runs (created_at);
CREATE INDEX runs_status ON runs (status);

CREATE TABLE run_events (
    id                INTEGER PRIMARY KEY,
    run_id            INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq               INTEGER NOT NULL,
    at                TEXT NOT NULL,
    kind              TEXT NOT NULL,            -- model_call | tool_call | note
    tool              TEXT,
    status            TEXT NOT NULL,
    arguments         TEXT,
    detail            TEXT,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    duration_ms       INTEGER NOT NULL DEFAULT 0,
    UNIQUE (run_id, seq)
);

CREATE TABLE memories (
    id         INTEGER PRIMARY KEY,
    key        TEXT NOT NULL UNIQUE,
    content    TEXT NOT NULL,
    category   TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX memories_updated_at ON memories (updated_at);
CREATE INDEX memories_category_updated_at ON memories (category, updated_at);

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    key, content, category,
    content = 'memories',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
-- Default ranking: bm25 with a match in the key worth twice one in the
-- content, and one in the category half as much.
INSERT INTO memories_fts (memories_fts, rank) VALUES ('rank', 'bm25(2.0, 1.0, 0.5)');

CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, key, content, category)
    VALUES (new.id, new.key, new.content, new.category);
END;
CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, key, content, category)
    VALUES ('delete', old.id, old.key, old.content, old.category);
END;
CREATE TRIGGER memories_fts_au AFTER UPDATE OF key, content, category ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, key, content, category)
    VALUES ('delete', old.id, old.key, old.content, old.category);
    INSERT INTO memories_fts (rowid, key, content, category)
    VALUES (new.id, new.key, new.content, new.category);
END;
"#;

/// What a routine run needs beyond a chat session: the rendered prompt, the
/// trigger's context, the attempt, the process that runs it (to find runs
/// whose process died), and one row per delivery with its own status.
pub(super) const V2_ROUTINE_RUNS: &str = r#"
ALTER TABLE runs ADD COLUMN prompt TEXT;
ALTER TABLE runs ADD COLUMN trigger_context TEXT;
ALTER TABLE runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
ALTER TABLE runs ADD COLUMN pid INTEGER;
CREATE INDEX runs_by_routine ON runs (routine, id);
CREATE INDEX runs_by_status ON runs (status);

CREATE TABLE deliveries (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    kind        TEXT NOT NULL,              -- file | mail
    target      TEXT NOT NULL,              -- what a person reads: the path, the addresses
    on_failure  INTEGER NOT NULL DEFAULT 0, -- 1 for on_failure deliveries
    payload     TEXT NOT NULL,              -- JSON: everything needed to retry without the agent
    status      TEXT NOT NULL,              -- pending | delivered | failed
    attempts    INTEGER NOT NULL DEFAULT 0,
    error       TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (run_id, seq)
);
CREATE INDEX deliveries_by_status ON deliveries (status);

-- History of routines with `session: persistent`.
CREATE TABLE sessions (
    routine     TEXT PRIMARY KEY,
    history     TEXT NOT NULL,              -- JSON array of messages
    updated_at  TEXT NOT NULL
);
"#;

/// What the daemon needs: the last scheduled instant of each routine (for
/// catch-up after downtime), why a run was skipped or interrupted, and the
/// earliest time a queued run may start (jitter).
pub(super) const V3_DAEMON: &str = r#"
CREATE TABLE schedule_state (
    routine         TEXT PRIMARY KEY,
    last_scheduled  TEXT NOT NULL,           -- the newest instant fired or recorded as missed
    missed_unrecorded INTEGER NOT NULL DEFAULT 0, -- missed instants counted but not given a row each
    updated_at      TEXT NOT NULL
);
-- skipped: overlap | missed | replaced;  interrupted: crash | shutdown | replaced
ALTER TABLE runs ADD COLUMN reason TEXT;
ALTER TABLE runs ADD COLUMN not_before TEXT;
-- Same column as runs_status (v1); every index costs each claimed fire.
DROP INDEX IF EXISTS runs_by_status;
"#;

/// The greeting times of each day, decided once and kept, so a restarted
/// daemon keeps the day's plan instead of drawing new times.
pub(super) const V4_GREETINGS: &str = r#"
CREATE TABLE greeting_plans (
    day         TEXT PRIMARY KEY,            -- local date (engine timezone) the active hours start on
    slots       TEXT NOT NULL,               -- JSON array of instants, RFC 3339 UTC
    created_at  TEXT NOT NULL
);
"#;

/// What the status page reads (SPEC §11), each answered without reading
/// run rows one by one, also at 100,000 runs:
/// - `routine_state`: whether a routine is paused (a routine without a row
///   is active);
/// - `runs_by_routine` also carries the status and times, so a routine's
///   recent runs (sparklines, durations, the list filtered by routine and
///   status) never read the table rows, which hold prompts and outputs;
/// - `run_hours`: runs and tokens per UTC hour and status, kept by
///   triggers on every write to `runs` (an insert, a status change, a
///   deletion by pruning), so the charts add up 14 days from a few hundred
///   rows instead of tens of thousands. Chat runs are not counted.
pub(super) const V5_STATUS_PAGE: &str = r#"
CREATE TABLE routine_state (
    routine     TEXT PRIMARY KEY,
    paused_at   TEXT,                        -- set while the routine is paused
    updated_at  TEXT NOT NULL
);

DROP INDEX runs_by_routine;
CREATE INDEX runs_by_routine ON runs (routine, id, status, created_at, started_at, finished_at);

CREATE TABLE run_hours (
    hour              TEXT NOT NULL,         -- the UTC hour of created_at: 2025-01-31T08
    status            TEXT NOT NULL,
    runs              INTEGER NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    PRIMARY KEY (hour, status)
) WITHOUT ROWID;

INSERT INTO run_hours (hour, status, runs, prompt_tokens, completion_tokens)
SELECT substr(created_at, 1, 13), status, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens)
FROM runs WHERE kind != 'chat' GROUP BY 1, 2;

CREATE TRIGGER run_hours_insert AFTER INSERT ON runs WHEN new.kind != 'chat' BEGIN
    INSERT INTO run_hours (hour, status, runs, prompt_tokens, completion_tokens)
    VALUES (substr(new.created_at, 1, 13), new.status, 1, new.prompt_tokens, new.completion_tokens)
    ON CONFLICT (hour, status) DO UPDATE SET runs = runs + 1,
        prompt_tokens = prompt_tokens + excluded.prompt_tokens,
        completion_tokens = completion_tokens + excluded.completion_tokens;
END;

CREATE TRIGGER run_hours_delete AFTER DELETE ON runs WHEN old.kind != 'chat' BEGIN
    UPDATE run_hours SET runs = runs - 1, prompt_tokens = prompt_tokens - old.prompt_tokens,
        completion_tokens = completion_tokens - old.completion_tokens
    WHERE hour = substr(old.created_at, 1, 13) AND status = old.status;
END;

CREATE TRIGGER run_hours_update AFTER UPDATE OF kind, status, created_at, prompt_tokens, completion_tokens ON runs
BEGIN
    UPDATE run_hours SET runs = runs - 1, prompt_tokens = prompt_tokens - old.prompt_tokens,
        completion_tokens = completion_tokens - old.completion_tokens
    WHERE old.kind != 'chat' AND hour = substr(old.created_at, 1, 13) AND status = old.status;
    INSERT INTO run_hours (hour, status, runs, prompt_tokens, completion_tokens)
    SELECT substr(new.created_at, 1, 13), new.status, 1, new.prompt_tokens, new.completion_tokens
    WHERE new.kind != 'chat'
    ON CONFLICT (hour, status) DO UPDATE SET runs = runs + 1,
        prompt_tokens = prompt_tokens + excluded.prompt_tokens,
        completion_tokens = completion_tokens + excluded.completion_tokens;
END;
"#;

/// A run's owner: the id of the process that holds `owners/ID.lock` beside the database
/// (see `store/orphans.rs`). A pid alone is reused, most visibly by a daemon that is PID 1 in
/// a container and starts again as PID 1.
pub(super) const V6_OWNER: &str = r#"
ALTER TABLE runs ADD COLUMN owner INTEGER;
"#;

/// A delivery that failed for good (an SMTP 5xx, a bad address, a path or template that cannot
/// work): the daemon does not attempt it again; `routines deliver --retry` does, when asked.
pub(super) const V7_PERMANENT: &str = r#"
ALTER TABLE deliveries ADD COLUMN permanent INTEGER NOT NULL DEFAULT 0;
"#;

/// How each earlier attempt of a run ended (one line each, oldest first), so a run that
/// succeeded at attempt 2 still says that attempt 1 was interrupted and why.
pub(super) const V8_EARLIER: &str = r#"
ALTER TABLE runs ADD COLUMN earlier_attempts TEXT;
"#;

/// A delivery is one row per (run, seq, on_failure), claimed before each attempt by the process
/// that makes it (`owner`, `pid`: see `store/orphans.rs`), so a `sending` row left by a dead
/// process is told apart from one still in flight. `deliver` and `on_failure.deliver` both
/// count `seq` from 0, so the identity includes `on_failure` (an interrupted attempt that failed
/// and a later one that succeeded have one of each). SQLite cannot change a table's UNIQUE
/// constraint in place: the table is made again and its rows copied, each claimed by its run's
/// process as before.
pub(super) const V9_DELIVERY_CLAIMS: &str = r#"
CREATE TABLE deliveries_v9 (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    kind        TEXT NOT NULL,              -- file | mail
    target      TEXT NOT NULL,              -- what a person reads: the path, the addresses
    on_failure  INTEGER NOT NULL DEFAULT 0, -- 1 for on_failure deliveries
    payload     TEXT NOT NULL,              -- JSON: everything needed to retry without the agent
    status      TEXT NOT NULL,              -- pending | sending | delivered | failed | uncertain
    attempts    INTEGER NOT NULL DEFAULT 0,
    error       TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    permanent   INTEGER NOT NULL DEFAULT 0,
    owner       INTEGER,                    -- the process that claimed it last (store/orphans.rs)
    pid         INTEGER,                    -- its pid, for stores without owner locks
    UNIQUE (run_id, seq, on_failure)
);
INSERT INTO deliveries_v9 (id, run_id, seq, kind, target, on_failure, payload, status, attempts, error,
                           created_at, updated_at, permanent, owner, pid)
SELECT d.id, d.run_id, d.seq, d.kind, d.target, d.on_failure, d.payload, d.status, d.attempts, d.error,
       d.created_at, d.updated_at, d.permanent, r.owner, r.pid
FROM deliveries d LEFT JOIN runs r ON r.id = d.run_id;
DROP TABLE deliveries;
ALTER TABLE deliveries_v9 RENAME TO deliveries;
CREATE INDEX deliveries_by_status ON deliveries (status);
"#;

/// The daemon keeps only a window of the durable queue in memory; the rest waits as `queued`
/// rows. This index holds only those rows, by `not_before`, so the daemon finds when the
/// next jittered fire among them becomes due without reading them all. It costs each claimed
/// fire one index entry, removed when the run starts.
pub(super) const V10_QUEUED: &str = r#"
CREATE INDEX runs_queued ON runs (not_before) WHERE status = 'queued';
"#;

/// Cluster of daemons on one database (SPEC §12; used on PostgreSQL, kept alike here):
/// - `runs.fire_key`: the identity of a fire that has no instant, unique per routine. A file
///   event's is its path with the file's size and mtime, so two nodes that see the same file
///   change claim it once.
/// - `nodes`: each process that owns runs, its host and its last heartbeat; a run whose owner's
///   lease lapsed is taken over by another node.
pub(super) const V11_CLUSTER: &str = r#"
ALTER TABLE runs ADD COLUMN fire_key TEXT;
CREATE UNIQUE INDEX runs_fire_key ON runs (routine, fire_key) WHERE fire_key IS NOT NULL;
CREATE TABLE nodes (
    id           INTEGER PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT NOT NULL,
    role         TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    heartbeat    TEXT NOT NULL,
    lease_ms     INTEGER NOT NULL,
    skew_ms      INTEGER NOT NULL DEFAULT 0
);
"#;

/// Since when a node has renewed its heartbeat without a gap of half a lease: a node judges
/// others dead only after one lease of that (see `postgres/cluster.rs`). Kept alike here.
pub(super) const V12_LIVE_SINCE: &str = r#"
ALTER TABLE nodes ADD COLUMN live_since TEXT;
"#;

/// A paused routine's fires are one `skipped` row per stretch of the pause, not one each
/// (`store/pause.rs`): `fires` counts the fires the row stands for (NULL: one) and `last_fire`
/// holds the newest of their instants, so a fire at or before it is a duplicate.
pub(super) const V13_PAUSED_SPANS: &str = r#"
ALTER TABLE runs ADD COLUMN fires INTEGER;
ALTER TABLE runs ADD COLUMN last_fire TEXT;
"#;
